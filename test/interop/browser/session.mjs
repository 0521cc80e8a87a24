// Drives one real headless Chromium (Debian's /usr/bin/chromium, through
// playwright-core) through a list of steps against idp-proxy in session
// mode, and reports what the browser saw after each one. The Go tests
// (../session_test.go) choose the steps and judge the observations.
//
//   node session.mjs '{"chromium":"/usr/bin/chromium","timeoutMs":30000,"steps":[
//     {"do":"goto","url":"http://127.0.0.1:PORT/app/page?x=1"},
//     {"do":"login","username":"alice","password":"alice-password"},
//     {"do":"reload"},
//     {"do":"waitPastExp","slackMs":1000},
//     {"do":"goto","url":"http://127.0.0.1:PORT/auth/logout","until":"http://127.0.0.1:PORT/public/"},
//     {"do":"click","selector":"#kc-logout","until":"http://127.0.0.1:OP/realms/demo/"},
//     {"do":"fetch","path":"/app/data"}]}'
//
// "args" (optional) are extra Chromium flags, e.g. --host-resolver-rules
// to send several host names to loopback.
//
// Steps:
//   goto URL [until PREFIX]   navigate; with until, also wait for the page to
//                             land on a URL starting with PREFIX (scripted hops)
//   reload                    reload the page
//   login USER PASSWORD       fill the provider's login form (form#kc-form-login)
//                             and wait until the browser has left the provider
//   click SELECTOR [until]    click, then wait for the next page (or PREFIX)
//   waitPastExp [slackMs]     wait until the access token the upstream last
//                             echoed (echo.token_exp) has expired, plus slack
//   fetch PATH                fetch(PATH) from the page, like a script would
//
// An observation holds the page's URL (query values other than a few
// harmless ones redacted: codes, states and ID tokens travel in URLs), the
// documents the main frame loaded during the step with their statuses
// (redirects included), the page's title, the JSON the test upstream
// embeds as <script id="echo">, whether the provider's login form or its
// logged-out page shows, and the cookies' names and attributes (never their
// values). One JSON line on stdout; exit 1 on any error (stderr).

import { logger, redactor, signIn, sleep, withChromium } from './common.mjs';

const cfg = JSON.parse(process.argv[2] ?? '{}');
if (!Array.isArray(cfg.steps) || cfg.steps.length === 0) throw new Error('missing steps in the argument');
const TIMEOUT = Number(cfg.timeoutMs ?? 30000);
const log = logger('browser');

// Query parameters whose values may be reported; every other value is
// replaced by "-" (authorization codes, states, nonces, id_token_hint).
const redact = redactor(['return_to', 'client_id', 'post_logout_redirect_uri', 'x', 'replica']);

async function main() {
  await withChromium(cfg, TIMEOUT, {}, async (context, page) => {
    const origins = new Set();
    let docs = []; // main-frame documents of the current step
    page.on('response', (r) => {
      const req = r.request();
      if (req.isNavigationRequest() && req.frame() === page.mainFrame()) {
        docs.push({ method: req.method(), url: redact(r.url()), status: r.status() });
      }
    });
    const out = { observations: [] };
    let lastEcho = null;

    const observe = async (step) => {
      await page.waitForLoadState('load');
      const o = {
        do: step.do,
        url: redact(page.url()),
        title: await page.title(),
        docs,
        echo: null,
        loginForm: await page.locator('form#kc-form-login').count() > 0,
        loggedOut: await page.locator('#kc-logged-out').count() > 0,
      };
      const echo = page.locator('script#echo');
      if (await echo.count() > 0) {
        o.echo = JSON.parse(await echo.textContent());
        lastEcho = o.echo;
      }
      if (docs.length > 0) {
        const last = docs[docs.length - 1];
        o.status = last.status;
      }
      const u = new URL(page.url());
      if (u.protocol.startsWith('http')) origins.add(u.origin);
      o.cookies = (await context.cookies([...origins])).map((c) => ({
        name: c.name, domain: c.domain, path: c.path, httpOnly: c.httpOnly, secure: c.secure, sameSite: c.sameSite,
      }));
      return o;
    };

    for (const [i, step] of cfg.steps.entries()) {
      docs = [];
      let extra = {};
      const landed = (prefix) => page.waitForURL((u) => u.href.startsWith(prefix), { waitUntil: 'load' });
      switch (step.do) {
        case 'goto':
          await page.goto(step.url, { waitUntil: 'load' });
          if (step.until) await landed(step.until);
          break;
        case 'reload':
          await page.reload({ waitUntil: 'load' });
          break;
        case 'login':
          await signIn(page, step.username, step.password);
          break;
        case 'click':
          await Promise.all([
            step.until ? landed(step.until) : page.waitForEvent('framenavigated'),
            page.click(step.selector),
          ]);
          break;
        case 'waitPastExp': {
          if (!lastEcho?.token_exp) throw new Error(`step ${i}: no access token expiry seen yet`);
          const ms = lastEcho.token_exp * 1000 + Number(step.slackMs ?? 1000) - Date.now();
          if (ms > 60000) throw new Error(`step ${i}: the token expires in ${ms} ms, too long to wait`);
          extra = { waitedMs: Math.max(0, ms) };
          if (ms > 0) await sleep(ms);
          break;
        }
        case 'fetch':
          extra = {
            fetch: await page.evaluate(async (p) => {
              const r = await fetch(p, { redirect: 'manual' });
              return { status: r.status, contentType: r.headers.get('content-type') ?? '', body: (await r.text()).slice(0, 300) };
            }, step.path),
          };
          break;
        default:
          throw new Error(`step ${i}: unknown step ${step.do}`);
      }
      const o = { ...await observe(step), ...extra };
      out.observations.push(o);
      log(`${i} ${step.do}: ${o.status ?? '-'} ${o.url}${o.loginForm ? ' (login form)' : ''}`);
    }
    process.stdout.write(`${JSON.stringify(out)}\n`);
  });
}

main().catch((err) => {
  process.stderr.write(`[browser] error: ${err.stack || err}\n`);
  process.exit(1);
});
