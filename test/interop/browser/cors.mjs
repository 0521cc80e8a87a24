// cors.mjs: cross-origin fetch() calls from pages of other origins, in
// headless Chromium, for TestBrowserCORS. The argument (JSON) gives the
// pages and, for each, the calls its script makes; cookies are set in the
// browser first (for credentials: "include"). It prints
// {"pages": [{"url", "calls": [{"name", "status", "headers", "body",
// "error"}]}]}: what the script could read of each answer, or the error
// fetch() rejected with (a CORS refusal is a TypeError that says nothing
// more, by design).

import { logger, withChromium } from './common.mjs';

const log = logger('cors');
const cfg = JSON.parse(process.argv[2]);
const timeout = cfg.timeoutMs ?? 30000;

const out = await withChromium(cfg, timeout, {}, async (context, page) => {
  if (cfg.cookies?.length) await context.addCookies(cfg.cookies);
  const consoleErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  const pages = [];
  for (const p of cfg.pages) {
    await page.goto(p.url);
    log('page', p.url);
    const calls = [];
    for (const c of p.calls) {
      const r = await page.evaluate(async (c) => {
        try {
          const resp = await fetch(c.url, { method: c.method, headers: c.headers ?? {}, credentials: c.credentials ?? 'same-origin', body: c.body });
          const headers = {};
          for (const name of c.read ?? []) headers[name] = resp.headers.get(name);
          return { status: resp.status, headers, body: await resp.text() };
        } catch (e) {
          return { error: String(e) };
        }
      }, c);
      log(c.name, r.error ?? r.status);
      calls.push({ name: c.name, ...r });
    }
    pages.push({ url: p.url, calls });
  }
  return { pages, consoleErrors };
});
process.stdout.write(JSON.stringify(out));
