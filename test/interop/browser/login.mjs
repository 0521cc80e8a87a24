// Logs in through idp-proxy's /auth routes in a real headless Chromium
// (Debian's /usr/bin/chromium, driven by playwright-core), then uses the
// token from the callback's JSON document in the same page: POST /shorten
// and POST /auth/logout, both same-origin fetches to the proxy.
//
//   node login.mjs '{"proxy":"http://127.0.0.1:PORT","username":"alice","password":"alice-password",
//                    "url":"https://example.com/x","chromium":"/usr/bin/chromium"}'
//
// Prints one JSON line on stdout with what it saw; exits 1 on any error
// (the message on stderr). The Go test (../browser_test.go) checks the result.

import { logger, withChromium } from './common.mjs';

const cfg = JSON.parse(process.argv[2] ?? '{}');
for (const k of ['proxy', 'username', 'password', 'url']) {
  if (!cfg[k]) throw new Error(`missing ${k} in the argument`);
}
const TIMEOUT = Number(cfg.timeoutMs ?? 30000);
const log = logger('browser');

async function main() {
  await withChromium(cfg, TIMEOUT, {}, async (context, page) => {
    const out = { steps: [] };
    const step = (s) => { out.steps.push(s); log(s); };

    // 1. /auth/login redirects to the provider's own login page.
    const proxyOrigin = new URL(cfg.proxy).origin;
    await page.goto(`${cfg.proxy}/auth/login`);
    await page.waitForSelector('form#kc-form-login');
    out.loginPage = { url: page.url(), title: await page.title() };
    step(`login page ${page.url()}`);

    // 2. Fill it in like a user; wait for the callback's response.
    const callback = page.waitForResponse((r) => {
      const u = new URL(r.url());
      return u.origin === proxyOrigin && u.pathname === '/auth/callback';
    });
    await page.fill('#username', cfg.username);
    await page.fill('#password', cfg.password);
    await page.click('#kc-login');

    // 3. A consent page, when the provider shows one (Keycloak: form#kc-oauth).
    const first = await Promise.race([
      callback.then(() => 'callback'),
      page.waitForSelector('form#kc-oauth', { timeout: TIMEOUT }).then(() => 'consent'),
    ]);
    if (first === 'consent') {
      step('consent page');
      await page.click('form#kc-oauth [name=accept]');
    }
    const resp = await callback;
    await page.waitForLoadState('load');
    out.callback = {
      url: page.url(),
      status: resp.status(),
      contentType: resp.headers()['content-type'] ?? '',
      document: await resp.json(),
      shown: (await page.locator('body').innerText()).includes('access_token'),
    };
    step(`callback ${resp.status()}`);

    // 4. Use the token from the page, same-origin, like a single-page app.
    const token = out.callback.document.access_token;
    out.shorten = await page.evaluate(async ({ tok, url }) => {
      const r = await fetch('/shorten', {
        method: 'POST',
        headers: { Authorization: `Bearer ${tok}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ url }),
      });
      return { status: r.status, body: await r.json() };
    }, { tok: token, url: cfg.url });
    step(`shorten ${out.shorten.status}`);

    // 5. Log out (ends the provider session through the refresh token).
    out.logout = await page.evaluate(async (refreshToken) => {
      const r = await fetch('/auth/logout', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ refresh_token: refreshToken }),
      });
      return { status: r.status, body: await r.json() };
    }, out.callback.document.refresh_token);
    step(`logout ${out.logout.status}`);

    out.cookiesAfterLogout = (await context.cookies(cfg.proxy)).map((c) => c.name);
    process.stdout.write(`${JSON.stringify(out)}\n`);
  });
}

main().catch((err) => {
  process.stderr.write(`[browser] error: ${err.stack || err}\n`);
  process.exit(1);
});
