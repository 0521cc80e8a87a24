// Opens idp-proxy's refusal pages in one real headless Chromium (Debian's
// /usr/bin/chromium, through playwright-core) and reports how the browser
// rendered them: whether the deployment's stylesheet and logo applied
// under the page's Content-Security-Policy, and every console error (a CSP
// violation is one). The Go test (../pages_test.go) judges them.
//
//   node pages.mjs '{"chromium":"/usr/bin/chromium","timeoutMs":20000,
//     "visits":[{"url":"http://127.0.0.1:PORT/admin/","headers":{}},
//               {"url":"...","headers":{"Authorization":"Bearer ..."}}]}'
//
// Output (stdout, one JSON line): {"visits":[{status, title, heading,
// barColor, logoWidth, styled, consoleErrors}]}.

import { logger, withChromium } from './common.mjs';

const cfg = JSON.parse(process.argv[2]);
const log = logger('pages');

// rendered reads the page as drawn: the bar's background (style.css and
// pages.colors), the logo's decoded width (a data: image the CSP must
// allow), and the built-in stylesheet's rule on .detail.
function rendered() {
  const bar = document.querySelector('.corp-bar');
  const logo = document.querySelector('img.corp-logo');
  const detail = document.getElementById('detail');
  return {
    heading: document.querySelector('h1')?.textContent ?? '',
    barColor: bar ? getComputedStyle(bar).backgroundColor : '',
    logoWidth: logo && logo.complete ? logo.naturalWidth : 0,
    styled: !!detail && getComputedStyle(detail).borderLeftWidth === '4px',
  };
}

async function main() {
  await withChromium(cfg, cfg.timeoutMs ?? 20000, { colorScheme: 'light' }, async (context, page) => {
    let consoleErrors = [];
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
    page.on('pageerror', (e) => { consoleErrors.push(`uncaught: ${e.message}`); });
    const out = { visits: [] };
    for (const v of cfg.visits) {
      consoleErrors = [];
      await context.setExtraHTTPHeaders(v.headers ?? {});
      const resp = await page.goto(v.url, { waitUntil: 'load' });
      const o = { status: resp ? resp.status() : 0, title: await page.title(), ...await page.evaluate(rendered), consoleErrors };
      log(`${o.status} ${o.title} bar=${o.barColor} logo=${o.logoWidth} styled=${o.styled} errors=${consoleErrors.length}`);
      out.visits.push(o);
    }
    process.stdout.write(`${JSON.stringify(out)}\n`);
  });
}

main().catch((err) => {
  process.stderr.write(`[pages] error: ${err.stack || err}\n`);
  process.exit(1);
});
