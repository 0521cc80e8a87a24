// Drives one real headless Chromium (Debian's /usr/bin/chromium, through
// playwright-core) through the shortener's web page (pkg/shortener/web)
// behind idp-proxy in session mode, and reports what the page showed after
// each step. The Go test (../page_test.go) chooses the steps and judges the
// observations. session.mjs is the generic driver of the session tests;
// this one knows the page's form, list and dialogs.
//
//   node page.mjs '{"chromium":"/usr/bin/chromium","timeoutMs":30000,
//     "viewport":{"width":1000,"height":720},"steps":[
//     {"do":"goto","url":"http://127.0.0.1:PORT/"},
//     {"do":"login","username":"alice","password":"alice-password"},
//     {"do":"create","url":"https://example.com/a","code":"docs"},
//     {"do":"visit","url":"http://127.0.0.1:PORT/docs"},
//     {"do":"reload"},
//     {"do":"qr","code":"docs"},
//     {"do":"delete","code":"docs"},
//     {"do":"screenshot","path":"/tmp/page.png"}]}'
//
// Steps:
//   goto URL                  navigate
//   login USER PASSWORD       fill the provider's login form (form#kc-form-login)
//                             and wait until the browser has left the provider
//   reload [untilVisits]      reload the page; with untilVisits {code, visits},
//                             reload until the list shows that count (visits
//                             are written in batches), reporting how many times
//   create URL [CODE] [MAX]   fill the page's form (URL, custom code, maximum
//                             visits) and submit it; wait for the API's answer
//                             and for the new link in the list (or the error)
//   visit URL                 a plain GET of URL from Node (not the browser: no
//                             cookie, redirects not followed, so nothing leaves
//                             loopback); reports the status and Location
//   qr CODE                   click the link's "QR code" button, wait for the
//                             dialog and its image to load, then close it
//   delete CODE               click the link's "Delete" button, accept the
//                             confirmation, wait until it has left the list
//   screenshot PATH           a PNG of the whole page
//
// After each step that leaves the browser on the shortener's page, the
// driver waits until the page has loaded the user's links (or shows its
// sign-in or error line). An observation holds the page's URL (query
// values other than a few harmless ones redacted), the documents the main
// frame loaded during the step with their statuses (redirects included),
// the API and asset requests the page made (method, path, status, content
// type), what the page shows (its sections, status and error lines, the
// links with their visit counts), the browser's console errors (CSP
// violations included) and uncaught exceptions, and the cookies' names and
// attributes (never their values). One JSON line on stdout; exit 1 on any
// error (stderr).

import * as fs from 'node:fs';
import * as path from 'node:path';

import { logger, redactor, signIn, sleep, withChromium } from './common.mjs';

const cfg = JSON.parse(process.argv[2] ?? '{}');
if (!Array.isArray(cfg.steps) || cfg.steps.length === 0) throw new Error('missing steps in the argument');
const TIMEOUT = Number(cfg.timeoutMs ?? 30000);
const log = logger('page');

// Query parameters whose values may be reported; every other value is
// replaced by "-" (authorization codes, states, nonces, id_token_hint).
const redact = redactor(['return_to', 'client_id', 'limit']);

// What the shortener's page shows, read from its DOM (null on any other
// page).
function readApp() {
  const $ = (id) => document.getElementById(id);
  if (!$('create-form')) return null;
  const shown = (id) => !!$(id) && !$(id).hidden;
  const links = [...document.querySelectorAll('#links > li')].map((li) => {
    const a = li.querySelector('p.short a');
    const meta = li.querySelector('p.meta')?.textContent ?? '';
    const m = /^(\d+)/.exec(meta);
    return {
      code: li.dataset.code,
      shortURL: a?.textContent ?? '',
      href: a?.getAttribute('href') ?? '',
      target: li.querySelector('p.target')?.textContent ?? '',
      meta,
      visits: m ? Number(m[1]) : -1,
      buttons: [...li.querySelectorAll('button')].map((b) => b.textContent),
    };
  });
  const d = $('qr-dialog');
  return {
    signin: shown('signin'),
    create: shown('create'),
    mine: shown('mine'),
    empty: shown('empty'),
    customCodes: !!$('short_code'),
    // "Signed in as NAME · Sign out" in the header.
    signedInAs: shown('who') ? ($('who-name')?.textContent ?? '') : '',
    signOut: $('signout')?.getAttribute('href') ?? '',
    status: $('status')?.textContent ?? '',
    error: shown('error') ? $('error').textContent : '',
    dialogOpen: !!d && d.open,
    // "Show more": the hidden attribute the script sets, and whether the
    // button is drawn all the same (author CSS can override [hidden]).
    moreHidden: !!$('more') && $('more').hidden,
    moreDrawn: !!$('more') && getComputedStyle($('more')).display !== 'none',
    links,
  };
}

// readRefusal reads idp-proxy's refusal page (internal/errorpage), null on
// any other page: its heading, detail, "Signed in as", whether it offers
// the sign-out, and whether its inline stylesheet applied (the CSP allows
// it by its hash; a refused one leaves the body unstyled).
function readRefusal() {
  const detail = document.getElementById('detail');
  if (!detail) return null;
  return {
    heading: document.querySelector('main h1')?.textContent ?? '',
    detail: detail.textContent,
    who: document.querySelector('.who')?.textContent ?? '',
    signOut: !!document.getElementById('sign-out'),
    styled: getComputedStyle(document.body).maxWidth === '768px',
  };
}

// The page is settled once its first GET /links has been answered: one of
// its sections or its error line shows.
function appSettled() {
  const $ = (id) => document.getElementById(id);
  if (!$('create-form')) return true;
  return !$('mine').hidden || !$('signin').hidden || !$('error').hidden;
}

async function main() {
  await withChromium(cfg, TIMEOUT, {
    viewport: cfg.viewport ?? { width: 1000, height: 720 },
    deviceScaleFactor: 1,
    colorScheme: 'light',
    locale: 'en-US',
    timezoneId: 'UTC',
  }, async (context, page) => {
    const origins = new Set();
    let docs = []; // main-frame documents of the current step
    let api = []; // the page's other requests of the current step
    let consoleErrors = [];
    let dialogs = [];
    page.on('response', (r) => {
      const req = r.request();
      if (req.isNavigationRequest() && req.frame() === page.mainFrame()) {
        docs.push({ method: req.method(), url: redact(r.url()), status: r.status() });
        return;
      }
      const u = new URL(r.url());
      if (req.frame() === page.mainFrame() && origins.has(u.origin)) {
        api.push({ method: req.method(), path: u.pathname, status: r.status(), contentType: r.headers()['content-type'] ?? '' });
      }
    });
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      const at = m.location()?.url;
      consoleErrors.push(at ? `${m.text()} [${redact(at)}]` : m.text());
    });
    page.on('pageerror', (e) => { consoleErrors.push(`uncaught: ${e.message}`); });
    // Only the page's Delete asks (window.confirm); any other dialog is
    // recorded and dismissed.
    let acceptDialogs = false;
    page.on('dialog', async (d) => {
      dialogs.push({ type: d.type(), message: d.message() });
      if (acceptDialogs && d.type() === 'confirm') await d.accept(); else await d.dismiss();
    });
    const out = { observations: [] };

    const settle = async () => {
      await page.waitForLoadState('load');
      await page.waitForFunction(appSettled);
    };
    const observe = async (step) => {
      await settle();
      const u = new URL(page.url());
      if (u.protocol.startsWith('http')) origins.add(u.origin);
      const o = {
        do: step.do,
        url: redact(page.url()),
        title: await page.title(),
        docs,
        api,
        app: await page.evaluate(readApp),
        refusal: await page.evaluate(readRefusal),
        loginForm: await page.locator('form#kc-form-login').count() > 0,
        consoleErrors,
        dialogs,
      };
      if (docs.length > 0) o.status = docs[docs.length - 1].status;
      o.cookies = (await context.cookies([...origins])).map((c) => ({
        name: c.name, path: c.path, httpOnly: c.httpOnly, sameSite: c.sameSite,
      }));
      return o;
    };
    const item = (code) => page.locator(`#links > li[data-code="${code}"]`);
    const answerTo = (method, pathname) => page.waitForResponse((r) => r.request().method() === method &&
      new URL(r.url()).pathname === pathname);

    for (const [i, step] of cfg.steps.entries()) {
      docs = [];
      api = [];
      consoleErrors = [];
      dialogs = [];
      let extra = {};
      // The page's origin is known before the first step's requests.
      if (step.url && step.do === 'goto') origins.add(new URL(step.url).origin);
      switch (step.do) {
        case 'goto':
          await page.goto(step.url, { waitUntil: 'load' });
          break;
        case 'reload': {
          // With untilVisits {code, visits}: reload (at most 20 times, 150 ms
          // apart) until the list shows that many visits of code.
          const want = step.untilVisits;
          let reloads = 0;
          for (;;) {
            await page.reload({ waitUntil: 'load' });
            reloads++;
            if (!want) break;
            await settle();
            const n = await page.evaluate((c) => {
              const li = document.querySelector(`#links > li[data-code="${c}"] p.meta`);
              const m = li && /^(\d+)/.exec(li.textContent);
              return m ? Number(m[1]) : -1;
            }, want.code);
            if (n === want.visits || reloads >= 20) break;
            await sleep(150);
          }
          extra = { reloads };
          break;
        }
        case 'login':
          await signIn(page, step.username, step.password);
          break;
        case 'create': {
          await settle();
          await page.fill('#url', step.url);
          if (step.code) await page.fill('#short_code', step.code);
          if (step.maxVisits) await page.fill('#max_visits', String(step.maxVisits));
          const [res] = await Promise.all([answerTo('POST', '/links'), page.click('#create-button')]);
          let body = null;
          try { body = await res.json(); } catch { body = null; }
          if (res.ok() && body?.short_code) {
            await item(body.short_code).waitFor();
          } else {
            await page.waitForSelector('#error:not([hidden])');
          }
          extra = { created: { status: res.status(), code: body?.short_code ?? '', shortURL: body?.short_url ?? '', detail: body?.detail ?? '' } };
          break;
        }
        case 'visit': {
          const r = await fetch(step.url, { redirect: 'manual', headers: step.userAgent ? { 'user-agent': step.userAgent } : {} });
          await r.arrayBuffer();
          extra = { visit: { status: r.status, location: r.headers.get('location') ?? '', contentType: r.headers.get('content-type') ?? '' } };
          break;
        }
        case 'qr': {
          await settle();
          const qrPath = new URL(`links/${encodeURIComponent(step.code)}/qr`, page.url()).pathname;
          const [res] = await Promise.all([
            answerTo('GET', qrPath),
            item(step.code).locator('button', { hasText: 'QR code' }).click(),
          ]);
          await page.waitForFunction(() => {
            const img = document.getElementById('qr-img');
            return document.getElementById('qr-dialog').open && img.complete && img.naturalWidth > 0;
          });
          const shown = await page.evaluate(() => {
            const img = document.getElementById('qr-img');
            return {
              open: document.getElementById('qr-dialog').open,
              src: new URL(img.src).pathname,
              alt: img.alt,
              naturalWidth: img.naturalWidth,
              naturalHeight: img.naturalHeight,
              url: document.getElementById('qr-url').textContent,
              focused: document.activeElement?.id ?? '',
            };
          });
          await page.click('#qr-close');
          await page.waitForFunction(() => !document.getElementById('qr-dialog').open);
          extra = { qr: { ...shown, status: res.status(), contentType: res.headers()['content-type'] ?? '', closed: true } };
          break;
        }
        case 'edit': {
          // Open the edit dialog of step.code, set the URL (and the visit
          // limit), save; report the answer and the list item afterwards.
          await settle();
          await item(step.code).locator('button', { hasText: 'Edit' }).click();
          await page.waitForFunction(() => document.getElementById('edit-dialog').open);
          const opened = await page.evaluate(() => ({
            open: document.getElementById('edit-dialog').open,
            focused: document.activeElement?.id ?? '',
            fieldLabel: document.querySelector('label[for="edit-url"]')?.textContent ?? '',
          }));
          await page.fill('#edit-url', step.url);
          await page.fill('#edit-max', step.maxVisits ? String(step.maxVisits) : '');
          const [res] = await Promise.all([answerTo('PATCH', `/links/${step.code}`), page.click('#edit-save')]);
          await page.waitForFunction(() => !document.getElementById('edit-dialog').open);
          const after = await page.evaluate((c) => {
            const li = document.querySelector(`#links > li[data-code="${c}"]`);
            return {
              stillOpen: document.getElementById('edit-dialog').open,
              target: li?.querySelector('p.target')?.textContent ?? '',
              meta: li?.querySelector('p.meta')?.textContent ?? '',
            };
          }, step.code);
          extra = { edited: { status: res.status(), ...opened, ...after } };
          break;
        }
        case 'stats': {
          // Open the visits dialog of step.code (with untilVisits: close
          // and reopen, at most 20 times, until it counts that many).
          await settle();
          const statsPath = `/links/${step.code}/stats`;
          let res;
          let shown;
          for (let tries = 0; ; tries++) {
            [res] = await Promise.all([
              answerTo('GET', statsPath),
              item(step.code).locator('button', { hasText: 'Visits' }).click(),
            ]);
            await page.waitForFunction(() => {
              const s = document.getElementById('stats-summary').textContent;
              return s !== '' && !s.startsWith('Loading') || !document.getElementById('stats-error').hidden;
            });
            shown = await page.evaluate(() => {
              const svg = document.getElementById('stats-chart');
              const rows = [...document.querySelectorAll('#stats-table tbody tr')];
              const num = (td) => Number(td?.textContent ?? 0);
              const col = (caption) => [...document.querySelectorAll('#stats-breakdowns table')]
                .find((t) => t.caption?.textContent === caption);
              const values = (t) => t ? [...t.tBodies[0].rows].map((r) => r.cells[0].textContent) : [];
              return {
                open: document.getElementById('stats-dialog').open,
                focused: document.activeElement?.id ?? '',
                summary: document.getElementById('stats-summary').textContent,
                bars: svg.querySelectorAll('rect.bar').length,
                botBars: svg.querySelectorAll('rect.bot').length,
                chartRole: svg.getAttribute('role') ?? '',
                chartLabel: document.getElementById(svg.getAttribute('aria-labelledby') ?? '')?.textContent ?? '',
                rows: rows.length,
                rowVisits: rows.reduce((n, r) => n + num(r.cells[1]), 0),
                rowBots: rows.reduce((n, r) => n + num(r.cells[2]), 0),
                captions: [...document.querySelectorAll('#stats-breakdowns table caption')].map((c) => c.textContent),
                browsers: values(col('Browsers')),
                referrers: values(col('Referrers')),
                externalRef: /(src|href)=["']?(https?:)?\/\//.test(document.getElementById('stats-dialog').innerHTML),
              };
            });
            const want = step.untilVisits;
            if (!want || shown.rowVisits === want.visits || tries >= 20) break;
            await page.click('#stats-close');
            await sleep(150);
          }
          await page.click('#stats-close');
          await page.waitForFunction(() => !document.getElementById('stats-dialog').open);
          extra = { stats: { status: res.status(), ...shown, closed: true } };
          break;
        }
        case 'delete': {
          await settle();
          acceptDialogs = true;
          try {
            const [res] = await Promise.all([
              answerTo('DELETE', `/links/${step.code}`),
              item(step.code).locator('button', { hasText: 'Delete' }).click(),
            ]);
            await item(step.code).waitFor({ state: 'detached' });
            extra = { deleted: { status: res.status() } };
          } finally {
            acceptDialogs = false;
          }
          break;
        }
        case 'screenshot': {
          await settle();
          // No focus ring or text cursor in the picture.
          await page.evaluate(() => document.activeElement?.blur());
          fs.mkdirSync(path.dirname(step.path), { recursive: true });
          const buf = await page.screenshot({ path: step.path, fullPage: true, type: 'png', animations: 'disabled' });
          extra = { screenshot: { path: step.path, bytes: buf.length } };
          break;
        }
        default:
          throw new Error(`step ${i}: unknown step ${step.do}`);
      }
      const o = { ...await observe(step), ...extra };
      out.observations.push(o);
      const links = o.app ? ` links=[${o.app.links.map((l) => `${l.code}:${l.visits}`).join(' ')}]` : '';
      log(`${i} ${step.do}: ${o.status ?? '-'} ${o.url}${o.loginForm ? ' (login form)' : ''}${links}`);
    }
    process.stdout.write(`${JSON.stringify(out)}\n`);
  });
}

main().catch((err) => {
  process.stderr.write(`[page] error: ${err.stack || err}\n`);
  process.exit(1);
});
