// The shortener's page: plain JavaScript, no build step. It calls the
// JSON API on this origin; the browser sends the session cookie itself
// (behind idp-proxy, or pkg/idp in cookie mode). No token is handled here.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const loginURL = document.body.dataset.loginUrl || "/auth/login?return_to=/";
  const state = { cursor: null, busy: false };

  function say(msg) { $("status").textContent = msg; }
  function fail(msg) {
    const e = $("error");
    e.textContent = msg;
    e.hidden = !msg;
  }

  // api calls the JSON API; it returns the parsed body, or throws an Error
  // carrying the problem's detail and the status.
  async function api(method, path, body) {
    const opts = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, opts);
    } catch (e) {
      const err = new Error("The service cannot be reached. Check your connection and try again.");
      err.status = 0;
      throw err;
    }
    if (res.status === 204) return null;
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (!res.ok) {
      const err = new Error((data && data.detail) || ("Request failed (" + res.status + ")."));
      err.status = res.status;
      throw err;
    }
    return data;
  }

  function showSignIn() {
    $("who").hidden = true;
    $("signin").hidden = false;
    $("create").hidden = true;
    $("mine").hidden = true;
    $("signin-link").href = loginURL;
  }

  function fmtDate(s) {
    if (!s) return "";
    const d = new Date(s);
    return isNaN(d) ? s : d.toLocaleString();
  }

  function button(text, cls, onClick, label) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    if (cls) b.className = cls;
    if (label) b.setAttribute("aria-label", label);
    b.addEventListener("click", onClick);
    return b;
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function render(link) {
    const li = el("li");
    li.dataset.code = link.short_code;
    const a = el("a", "short", link.short_url);
    a.href = link.short_url;
    a.rel = "noopener noreferrer";
    const p = el("p", "short");
    p.appendChild(a);
    li.appendChild(p);
    li.appendChild(el("p", "target", link.url));
    const meta = el("p", "meta");
    const counted = link.max_visits || link.visits;
    const visits = link.visits + (link.max_visits ? " of " + link.max_visits : "") + (counted === 1 ? " visit" : " visits");
    meta.textContent = visits + " · created " + fmtDate(link.created_at) + (link.expires_at ? " · expires " + fmtDate(link.expires_at) : "");
    if (link.status !== "active") {
      const b = el("span", "badge gone", link.status);
      meta.append(" ", b);
    }
    li.appendChild(meta);
    const actions = el("div", "actions");
    actions.appendChild(button("Copy", "secondary", () => copy(link.short_url), "Copy " + link.short_url));
    actions.appendChild(button("QR code", "secondary", () => showQR(link), "Show the QR code of " + link.short_url));
    actions.appendChild(button("Edit", "secondary", () => showEdit(link, li), "Edit " + link.short_url));
    actions.appendChild(button("Visits", "secondary", () => showStats(link), "Show the visits of " + link.short_url));
    actions.appendChild(button("Delete", "danger", () => remove(link, li), "Delete " + link.short_url));
    li.appendChild(actions);
    return li;
  }

  async function copy(text) {
    try {
      await navigator.clipboard.writeText(text);
      say("Copied " + text);
    } catch (e) {
      window.prompt("Copy the short URL:", text);
    }
  }

  function showQR(link) {
    const img = $("qr-img");
    img.alt = "QR code of " + link.short_url;
    img.src = "links/" + encodeURIComponent(link.short_code) + "/qr";
    $("qr-url").textContent = link.short_url;
    const d = $("qr-dialog");
    if (typeof d.showModal === "function") d.showModal(); else d.setAttribute("open", "");
    $("qr-close").focus();
  }

  function openDialog(d, focus) {
    if (typeof d.showModal === "function") d.showModal(); else d.setAttribute("open", "");
    if (focus) focus.focus();
  }

  function closeDialog(d) {
    if (typeof d.close === "function") d.close(); else d.removeAttribute("open");
  }

  // localInput formats an RFC 3339 time for a datetime-local input.
  function localInput(s) {
    if (!s) return "";
    const d = new Date(s);
    if (isNaN(d)) return "";
    const p = (n) => String(n).padStart(2, "0");
    return d.getFullYear() + "-" + p(d.getMonth() + 1) + "-" + p(d.getDate()) + "T" + p(d.getHours()) + ":" + p(d.getMinutes());
  }

  const editing = { link: null, li: null };

  function showEdit(link, li) {
    editing.link = link;
    editing.li = li;
    $("edit-short").textContent = link.short_url;
    $("edit-url").value = link.url;
    $("edit-url").removeAttribute("aria-invalid");
    $("edit-expires").value = localInput(link.expires_at);
    $("edit-max").value = link.max_visits || "";
    $("edit-error").hidden = true;
    openDialog($("edit-dialog"), $("edit-url"));
  }

  async function saveEdit(ev) {
    ev.preventDefault();
    const err = $("edit-error");
    err.hidden = true;
    const url = $("edit-url");
    if (!url.value.trim()) {
      url.setAttribute("aria-invalid", "true");
      err.textContent = "Enter the destination URL.";
      err.hidden = false;
      url.focus();
      return;
    }
    const body = { url: url.value.trim(), expires_at: null, max_visits: null };
    const exp = $("edit-expires").value;
    if (exp) {
      const d = new Date(exp);
      if (isNaN(d)) { err.textContent = "The expiry date is not valid."; err.hidden = false; return; }
      body.expires_at = d.toISOString();
    }
    const max = $("edit-max").value;
    if (max) body.max_visits = Number(max);
    const btn = $("edit-save");
    btn.disabled = true;
    try {
      const link = await api("PATCH", "links/" + encodeURIComponent(editing.link.short_code), body);
      const li = render(link);
      editing.li.replaceWith(li);
      closeDialog($("edit-dialog"));
      say("Saved " + link.short_url + " → " + link.url);
      li.querySelector("button").focus();
    } catch (e) {
      if (e.status === 401) { closeDialog($("edit-dialog")); return showSignIn(); }
      err.textContent = e.message;
      err.hidden = false;
    } finally {
      btn.disabled = false;
    }
  }

  // drawChart draws one bar per day (people, with bots stacked in a
  // darker shade) into the SVG; the numbers are also in the table.
  function drawChart(series) {
    const svg = $("stats-chart");
    svg.textContent = "";
    const w = 300, h = 100;
    const peak = Math.max(1, ...series.map((b) => b.visits));
    const bw = w / Math.max(1, series.length);
    series.forEach((b, i) => {
      const people = b.visits - b.bot_visits;
      const x = i * bw + bw * 0.1;
      const hp = (people / peak) * (h - 2);
      const hb = (b.bot_visits / peak) * (h - 2);
      for (const [cls, y, hh] of [["bar", h - hp, hp], ["bot", h - hp - hb, hb]]) {
        if (hh <= 0) continue;
        const r = document.createElementNS(svg.namespaceURI, "rect");
        r.setAttribute("class", cls);
        r.setAttribute("x", x.toFixed(2));
        r.setAttribute("y", y.toFixed(2));
        r.setAttribute("width", (bw * 0.8).toFixed(2));
        r.setAttribute("height", hh.toFixed(2));
        svg.appendChild(r);
      }
    });
  }

  function fmtDay(s) {
    const d = new Date(s);
    return isNaN(d) ? s : d.toLocaleDateString(undefined, { timeZone: "UTC" });
  }

  function breakdown(title, column, rows) {
    const t = el("table");
    const cap = el("caption", "", title);
    t.appendChild(cap);
    const head = el("thead");
    const tr = el("tr");
    for (const [text, cls] of [[column, ""], ["Visits", "num"]]) {
      const th = el("th", cls, text);
      th.scope = "col";
      tr.appendChild(th);
    }
    head.appendChild(tr);
    t.appendChild(head);
    const body = el("tbody");
    for (const r of rows.slice(0, 10)) {
      const row = el("tr");
      row.appendChild(el("td", "", r.value || "(none)"));
      row.appendChild(el("td", "num", String(r.visits)));
      body.appendChild(row);
    }
    if (!rows.length) {
      const row = el("tr");
      const td = el("td", "", "No visits yet");
      td.colSpan = 2;
      row.appendChild(td);
      body.appendChild(row);
    }
    t.appendChild(body);
    return t;
  }

  async function showStats(link) {
    $("stats-short").textContent = link.short_url;
    $("stats-summary").textContent = "Loading…";
    $("stats-error").hidden = true;
    $("stats-chart").textContent = "";
    $("stats-table").tBodies[0].textContent = "";
    $("stats-breakdowns").textContent = "";
    openDialog($("stats-dialog"), $("stats-close"));
    try {
      const st = await api("GET", "links/" + encodeURIComponent(link.short_code) + "/stats?by=day");
      $("stats-summary").textContent = st.visits + (st.visits === 1 ? " visit" : " visits") +
        " in the last 30 days: " + st.human_visits + " by people, " + st.bot_visits + " by bots.";
      drawChart(st.series);
      const tb = $("stats-table").tBodies[0];
      for (const b of st.series) {
        const row = el("tr");
        row.appendChild(el("td", "", fmtDay(b.start)));
        row.appendChild(el("td", "num", String(b.visits)));
        row.appendChild(el("td", "num", String(b.bot_visits)));
        tb.appendChild(row);
      }
      const bd = $("stats-breakdowns");
      bd.appendChild(breakdown("Referrers", "Referrer host", st.referrers));
      bd.appendChild(breakdown("Devices", "Device", st.devices));
      bd.appendChild(breakdown("Browsers", "Browser", st.browsers));
      bd.appendChild(breakdown("Countries", "Country", st.countries));
    } catch (e) {
      if (e.status === 401) { closeDialog($("stats-dialog")); return showSignIn(); }
      $("stats-summary").textContent = "";
      $("stats-error").textContent = e.message;
      $("stats-error").hidden = false;
    }
  }

  async function remove(link, li) {
    if (!window.confirm("Delete " + link.short_url + "? It stops redirecting.")) return;
    fail("");
    try {
      await api("DELETE", "links/" + encodeURIComponent(link.short_code));
      const next = li.nextElementSibling || li.previousElementSibling;
      li.remove();
      say("Deleted " + link.short_url);
      if (next) { const b = next.querySelector("button"); if (b) b.focus(); }
      $("empty").hidden = $("links").children.length > 0;
    } catch (e) {
      if (e.status === 401) return showSignIn();
      fail(e.message);
    }
  }

  async function load(more) {
    if (state.busy) return;
    state.busy = true;
    fail("");
    let path = "links?limit=50";
    if (more && state.cursor) path += "&cursor=" + encodeURIComponent(state.cursor);
    try {
      const page = await api("GET", path);
      if (page.user) {
        $("who-name").textContent = page.user.name || page.user.id;
        $("who").hidden = false;
      }
      $("signin").hidden = true;
      $("create").hidden = false;
      $("mine").hidden = false;
      const ul = $("links");
      if (!more) ul.textContent = "";
      for (const l of page.links) ul.appendChild(render(l));
      state.cursor = page.next_cursor;
      $("more").hidden = !state.cursor;
      $("empty").hidden = ul.children.length > 0;
    } catch (e) {
      if (e.status === 401) showSignIn(); else fail(e.message);
    } finally {
      state.busy = false;
    }
  }

  async function create(ev) {
    ev.preventDefault();
    fail("");
    const form = $("create-form");
    const url = $("url");
    url.removeAttribute("aria-invalid");
    if (!url.value.trim()) {
      url.setAttribute("aria-invalid", "true");
      fail("Enter the URL to shorten.");
      url.focus();
      return;
    }
    const body = { url: url.value.trim() };
    const code = $("short_code");
    if (code && code.value.trim()) body.short_code = code.value.trim();
    const exp = $("expires_at").value;
    if (exp) {
      const d = new Date(exp);
      if (isNaN(d)) { fail("The expiry date is not valid."); return; }
      body.expires_at = d.toISOString();
    }
    const max = $("max_visits").value;
    if (max) body.max_visits = Number(max);
    const btn = $("create-button");
    btn.disabled = true;
    try {
      const link = await api("POST", "links", body);
      const li = render(link);
      $("links").prepend(li);
      $("empty").hidden = true;
      form.reset();
      say("Created " + link.short_url);
      li.querySelector("button").focus();
    } catch (e) {
      if (e.status === 401) showSignIn(); else fail(e.message);
    } finally {
      btn.disabled = false;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("create-form").addEventListener("submit", create);
    $("more").addEventListener("click", () => load(true));
    $("qr-img").addEventListener("error", () => say("The QR code could not be loaded."));
    $("edit-form").addEventListener("submit", saveEdit);
    $("edit-cancel").addEventListener("click", () => closeDialog($("edit-dialog")));
    load(false);
  });
})();
