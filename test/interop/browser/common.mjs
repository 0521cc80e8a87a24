// What login.mjs, session.mjs and page.mjs share: headless Debian Chromium
// started as this machine's notes want it, a stderr logger, the redaction
// of secrets in URLs, and the provider's login form.

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { chromium } from 'playwright-core';

// Flags from the machine's notes: without the networking ones Chromium
// keeps trying to reach Google's hosts, which a closed network refuses.
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// logger returns a function that writes one "[tag] ..." line on stderr.
export const logger = (tag) => (...a) => process.stderr.write(`[${tag}] ${a.join(' ')}\n`);

export const sleep = (ms) => new Promise((r) => { setTimeout(r, ms); });

// withChromium starts headless Chromium (cfg.chromium, else Debian's, with
// the extra flags cfg.args) in a fresh, empty profile with the given timeout and extra context options,
// runs fn(context, page), and always closes Chromium and removes the
// profile.
export async function withChromium(cfg, timeout, options, fn) {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'interop-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: cfg.chromium ?? '/usr/bin/chromium',
    headless: true,
    args: [...ARGS, ...(cfg.args ?? [])],
    timeout,
    ...options,
  });
  try {
    context.setDefaultTimeout(timeout);
    const page = context.pages()[0] ?? await context.newPage();
    return await fn(context, page);
  } finally {
    await context.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
}

// redactor returns a function that replaces by "-" the value of every
// query parameter of a URL not named in shown (authorization codes,
// states, nonces, id_token_hint travel in URLs).
export function redactor(shown) {
  const keep = new Set(shown);
  return (href) => {
    let u;
    try {
      u = new URL(href);
    } catch {
      return href;
    }
    for (const k of [...u.searchParams.keys()]) {
      if (!keep.has(k)) u.searchParams.set(k, '-');
    }
    return u.href;
  };
}

// signIn fills the provider's login form (form#kc-form-login) and waits
// until the browser has left the provider.
export async function signIn(page, username, password) {
  await page.waitForSelector('form#kc-form-login');
  const provider = new URL(page.url()).origin;
  await page.fill('#username', username);
  await page.fill('#password', password);
  await Promise.all([
    page.waitForURL((u) => u.origin !== provider, { waitUntil: 'load' }),
    page.click('#kc-login'),
  ]);
}
