// hangar web: the session list and one session's live terminal.
//
// Everything an agent or a file can influence (titles, folders, screens,
// error messages) reaches the page through textContent or xterm.js, never
// through innerHTML: untrusted text is shown as text (DESIGN.md rule 11).
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const state = {
    readOnly: true,
    sessions: [],
    tabs: [],
    activity: new Map(), // id -> last activity seen, for notifications
    current: null, // the session id on screen, or null for the list
    currentHost: null, // the other host of the session on screen, or null for this machine
    far: [], // other hosts' sessions (`hangar ls --all-hosts --json`, each with `host`)
    down: [], // other hosts that did not answer: {host, reason}
    term: null,
    fit: null,
    scrollback: null, // the history view over the terminal (scrollback.js)
    ws: null,
    events: null,
    unpaired: false,
    problem: false, // the banner shows a daemon problem from the live stream
  };
  const encoder = new TextEncoder();
  const READ_ONLY = "Read-only view: you can watch, not type or act.";

  function short(id) {
    return String(id || "").slice(0, 8);
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function banner(text) {
    const b = $("banner");
    b.textContent = text || "";
    b.hidden = !text;
  }

  function unpaired(text) {
    state.unpaired = true;
    banner(text);
    if (state.events) state.events.close();
    $("conn").classList.remove("live");
  }

  async function api(method, path, body) {
    const opts = { method, headers: {} };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const resp = await fetch(path, opts);
    let data = null;
    try {
      data = await resp.json();
    } catch (_) {
      data = null;
    }
    if (resp.status === 401) {
      unpaired("This browser is not paired (or was revoked). Open the URL that `hangar web` printed.");
    }
    if (!resp.ok) {
      const msg = data && data.error ? data.error.message : "HTTP " + resp.status;
      throw new Error(msg);
    }
    return data;
  }

  function title(s) {
    return s.title && s.title.length ? s.title : s.provider + " " + short(s.id);
  }

  // A reset time (ms) as the person's clock shows it; unknown when none.
  function clock(ms) {
    if (typeof ms !== "number") return "an unknown time";
    return new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  }

  function waitingFirst(a, b) {
    const w = (s) => (s.activity === "waiting" ? 0 : 1);
    return w(a) - w(b);
  }

  // A session of another host: its rows, view and terminal go through
  // this server's ssh link to that host (`/api/hosts/HOST/...`).
  function isFar(s) {
    return !!s.host && s.host !== "local";
  }

  function sessionPath(host, id) {
    const sid = encodeURIComponent(id);
    return host ? "/api/hosts/" + encodeURIComponent(host) + "/sessions/" + sid : "/api/sessions/" + sid;
  }

  function row(s) {
    const li = el("li");
    const a = el("a", "row" + (s.activity === "waiting" ? " is-waiting" : ""));
    a.href = isFar(s)
      ? "#/h/" + encodeURIComponent(s.host) + "/" + encodeURIComponent(s.id)
      : "#/s/" + encodeURIComponent(s.id);
    a.dataset.session = s.id;
    if (isFar(s)) a.dataset.host = s.host;
    a.appendChild(el("span", "title", title(s)));
    const badges = el("span", "badges");
    if (isFar(s)) badges.appendChild(el("span", "badge host", s.host));
    if (s.activity && s.activity !== "unknown") badges.appendChild(el("span", "badge " + s.activity, s.activity));
    badges.appendChild(el("span", "badge " + s.state, s.state));
    if (s.limit) badges.appendChild(el("span", "badge limited", "limited until " + clock(s.limit.resets_at)));
    if (s.goal) {
      badges.appendChild(el("span", "badge goal", "goal " + s.goal.turns + "/" + s.goal.max_turns + " " + s.goal.state));
    }
    a.appendChild(badges);
    const where = s.placement === "pane" ? "" : " · " + s.placement;
    a.appendChild(el("span", "sub", providerOf(s) + " · " + short(s.id) + where + " · " + s.cwd));
    li.appendChild(a);
    return li;
  }

  // The provider, and the account it runs under (`claude@work`).
  function providerOf(s) {
    return s.account ? s.provider + "@" + s.account : s.provider;
  }

  function renderList() {
    const waiting = state.sessions.filter((s) => s.activity === "waiting");
    const wl = $("waiting-list");
    wl.replaceChildren(...waiting.map(row));
    $("waiting").hidden = waiting.length === 0;

    const tabs = $("tabs");
    const groups = [];
    const byTab = new Map();
    for (const t of state.tabs) {
      byTab.set(t.id, []);
      groups.push({ id: t.id, title: t.title });
    }
    for (const s of state.sessions) {
      if (!byTab.has(s.tab)) {
        byTab.set(s.tab, []);
        groups.push({ id: s.tab, title: s.tab ? "tab " + short(s.tab) : "no tab" });
      }
      byTab.get(s.tab).push(s);
    }
    const sections = [];
    for (const g of groups) {
      const list = byTab.get(g.id) || [];
      if (!list.length) continue;
      const sec = el("section", "group tab");
      sec.dataset.tab = g.id || "";
      sec.appendChild(el("h2", null, g.title));
      const onGrid = list.filter((s) => s.placement !== "parked").sort(waitingFirst);
      const parked = list.filter((s) => s.placement === "parked").sort(waitingFirst);
      if (onGrid.length) {
        const ul = el("ul", "sessions panes");
        ul.replaceChildren(...onGrid.map(row));
        sec.appendChild(ul);
      }
      if (parked.length) {
        sec.appendChild(el("h3", null, "Parked"));
        const ul = el("ul", "sessions parked");
        ul.replaceChildren(...parked.map(row));
        sec.appendChild(ul);
      }
      sections.push(sec);
    }
    tabs.replaceChildren(...sections);
    $("empty").hidden = state.sessions.length !== 0 || state.far.length !== 0;
    renderFar();
    document.title = (waiting.length ? "(" + waiting.length + ") " : "") + "hangar";
  }

  // Other machines' agents, waiting ones first, and the hosts that are down
  // with their reason (shown as text: it carries ssh's words).
  function renderFar() {
    const rows = state.far.slice().sort(waitingFirst);
    $("far-list").replaceChildren(...rows.map(row));
    $("far-down").replaceChildren(...state.down.map((d) => el("li", "down", "host " + d.host + " is down: " + d.reason)));
    $("far").hidden = rows.length === 0 && state.down.length === 0;
  }

  // Every host's list, asked every 5 s (each host within its bound on the
  // server: one that is down never holds the page up).
  async function refreshFar() {
    let doc;
    try {
      doc = await api("GET", "/api/all-hosts/sessions");
    } catch (_) {
      return;
    }
    const rows = Array.isArray(doc.sessions) ? doc.sessions : [];
    state.far = rows.filter(isFar);
    state.down = (Array.isArray(doc.down) ? doc.down : []).filter((d) => d.host !== "local");
    notifyTransitions(state.far);
    renderList();
    if (state.current && state.currentHost) renderSession();
  }

  // The usage view: `hangar usage --json` for the last 24 hours, a bar per
  // session (cost, or tokens when its model has no price: never $0) and
  // each account's windows, limited ones marked. Read at most every 30 s.
  async function refreshUsage() {
    const now = Date.now();
    if (state.usageAt && now - state.usageAt < 30000) return;
    state.usageAt = now;
    let doc;
    try {
      doc = await api("GET", "/api/usage");
    } catch (_) {
      return;
    }
    renderUsage(doc);
  }

  function renderUsage(doc) {
    const sessions = Array.isArray(doc.sessions) ? doc.sessions : [];
    const accounts = Array.isArray(doc.accounts) ? doc.accounts : [];
    const t = doc.total || {};
    $("usage-total").textContent =
      (t.requests || 0) + " requests, $" + (t.cost_usd || 0).toFixed(2) + " at list prices" +
      (t.unpriced_requests ? " (+" + t.unpriced_requests + " unpriced)" : "");
    const tokens = (s) => (s.input_tokens || 0) + (s.output_tokens || 0) +
      (s.cache_read_tokens || 0) + (s.cache_write_tokens || 0);
    const measure = (s) => (typeof s.cost_usd === "number" ? s.cost_usd : tokens(s));
    const maxOf = (priced) => Math.max(0, ...sessions
      .filter((s) => (typeof s.cost_usd === "number") === priced).map(measure));
    const maxCost = maxOf(true);
    const maxTokens = maxOf(false);
    $("usage-sessions").replaceChildren(...sessions.map((s) => {
      const priced = typeof s.cost_usd === "number";
      const li = el("li", "usage-row");
      li.appendChild(el("span", "title", s.title && s.title.length ? s.title : short(s.id)));
      const track = el("span", "bar-track");
      const fill = el("span", "bar " + (priced ? "priced" : "unpriced"));
      const max = priced ? maxCost : maxTokens;
      fill.style.width = (max > 0 ? Math.round((measure(s) / max) * 100) : 0) + "%";
      track.appendChild(fill);
      li.appendChild(track);
      li.appendChild(el("span", "sub", priced ? "$" + s.cost_usd.toFixed(2) : tokens(s) + " tokens, unpriced"));
      return li;
    }));
    $("usage-accounts").replaceChildren(...accounts.map((a) => {
      const limited = typeof a.limited_until === "number";
      const li = el("li", "usage-row" + (limited ? " is-limited" : ""));
      const windows = (Array.isArray(a.windows) ? a.windows : [])
        .filter((w) => typeof w.used_percent === "number")
        .map((w) => w.kind + " " + Math.round(w.used_percent) + "%").join("  ");
      li.appendChild(el("span", "title", a.provider + " " + String(a.account).slice(0, 15)));
      li.appendChild(el("span", "sub", windows));
      if (limited) li.appendChild(el("span", "badge limited", "limited until " + clock(a.limited_until)));
      return li;
    }));
    $("usage").hidden = sessions.length === 0 && accounts.length === 0;
  }

  function renderSession() {
    const s = state.currentHost
      ? state.far.find((x) => x.id === state.current && x.host === state.currentHost)
      : state.sessions.find((x) => x.id === state.current);
    // A far session is typed into in its terminal; the buttons act on
    // this machine's sessions only.
    $("controls").hidden = state.readOnly || !!state.currentHost;
    if (!s) {
      $("heading").textContent = short(state.current) + " (gone)";
      return;
    }
    $("heading").textContent = (state.currentHost ? state.currentHost + ": " : "") + title(s);
    const act = $("s-activity");
    act.textContent = s.activity;
    act.className = "badge " + s.activity;
    act.hidden = !s.activity || s.activity === "unknown";
    const st = $("s-state");
    st.textContent = s.state + (s.placement === "pane" ? "" : " · " + s.placement);
    st.className = "badge " + s.state;
    $("s-provider").textContent = providerOf(s);
    $("s-cwd").textContent = s.cwd;
    $("s-waiting").hidden = s.activity !== "waiting";
    const running = s.state === "live" || s.state === "spawning";
    const show = (name, yes) => {
      const b = document.querySelector('[data-action="' + name + '"]');
      if (b) b.hidden = !yes;
    };
    show("interrupt", running);
    show("wake", !running);
    show("hibernate", running);
    show("park", s.placement === "pane");
    show("unpark", s.placement === "parked");
  }

  function notifyTransitions(sessions) {
    for (const s of sessions) {
      const key = isFar(s) ? s.host + ":" + s.id : s.id;
      const before = state.activity.get(key);
      if (before !== undefined && before !== "waiting" && s.activity === "waiting") {
        if ("Notification" in window && Notification.permission === "granted") {
          try {
            new Notification(title(s) + " is waiting for you", { body: "hangar · " + (isFar(s) ? s.host + " · " : "") + s.provider, tag: key });
          } catch (_) {
            // Some browsers only notify from a service worker; the list still shows it.
          }
        }
      }
      state.activity.set(key, s.activity);
    }
  }

  // The live agents' memory against the budget, in the bar.
  function renderMemory(budget) {
    const m = $("memory");
    if (!budget) return;
    const mib = (b) => Math.floor(b / (1024 * 1024));
    let text = "mem " + mib(budget.memory_bytes) +
      (budget.max_memory_bytes ? "/" + mib(budget.max_memory_bytes) : "") + " MiB";
    const waiting = Array.isArray(budget.waiting_for_memory) ? budget.waiting_for_memory.length : 0;
    if (waiting > 0) text += ", " + waiting + " waiting";
    m.textContent = text;
    m.classList.toggle("over", !!budget.over_budget || waiting > 0);
    m.hidden = false;
  }

  function update(snapshot) {
    const sessions = Array.isArray(snapshot.sessions) ? snapshot.sessions : [];
    notifyTransitions(sessions);
    state.sessions = sessions;
    state.tabs = Array.isArray(snapshot.tabs) ? snapshot.tabs : [];
    renderMemory(snapshot.budget);
    renderList();
    refreshUsage();
    if (state.current) renderSession();
  }

  function listen() {
    const es = new EventSource("/api/events");
    state.events = es;
    es.addEventListener("sessions", (e) => {
      $("conn").classList.add("live");
      if (state.problem) {
        state.problem = false;
        banner(state.readOnly ? READ_ONLY : "");
      }
      update(JSON.parse(e.data));
    });
    es.addEventListener("problem", (e) => {
      state.problem = true;
      banner(JSON.parse(e.data).message);
    });
    es.onerror = async () => {
      $("conn").classList.remove("live");
      if (state.unpaired) return;
      try {
        await api("GET", "/api/whoami");
      } catch (_) {
        // api() shows the unpaired banner on a 401; a network blip just retries.
      }
    };
  }

  // ---- the terminal ----

  function ensureTerm() {
    if (state.term) return;
    const term = new window.Terminal({
      convertEol: false,
      cursorBlink: true,
      // History is the daemon's, read a page at a time (scrollback.js).
      scrollback: 0,
      fontSize: window.innerWidth < 600 ? 12 : 14,
      fontFamily: 'ui-monospace, "DejaVu Sans Mono", Menlo, monospace',
      disableStdin: state.readOnly,
      theme: { background: "#000000" },
    });
    const fit = new window.FitAddon.FitAddon();
    term.loadAddon(fit);
    term.open($("term"));
    term.onData((d) => sendInput(encoder.encode(d)));
    term.onBinary((d) => {
      const bytes = new Uint8Array(d.length);
      for (let i = 0; i < d.length; i++) bytes[i] = d.charCodeAt(i) & 0xff;
      sendInput(bytes);
    });
    term.onResize(({ cols, rows }) => {
      if (state.ws && state.ws.readyState === WebSocket.OPEN && !state.readOnly) {
        state.ws.send(JSON.stringify({ type: "resize", cols, rows }));
      }
    });
    window.addEventListener("resize", () => {
      if (state.current) fit.fit();
    });
    state.term = term;
    state.fit = fit;
    state.scrollback = window.HangarScrollback.attach(
      $("term-box"),
      (before, lines) => {
        const q = "?lines=" + lines + (before === null ? "" : "&before=" + before);
        return api("GET", sessionPath(state.currentHost, state.current) + "/history" + q);
      },
      () => state.term,
      () => {
        if (!state.readOnly) term.focus();
      },
    );
  }

  function sendInput(bytes) {
    if (state.readOnly) return;
    if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(bytes);
  }

  function connectTerminal(host, id) {
    ensureTerm();
    const term = state.term;
    state.scrollback.close();
    state.scrollback.setEnd(null);
    term.reset();
    state.fit.fit();
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const url =
      proto + "//" + location.host + sessionPath(host, id) +
      "/attach?cols=" + term.cols + "&rows=" + term.rows;
    const ws = new WebSocket(url);
    ws.binaryType = "arraybuffer";
    state.ws = ws;
    ws.onmessage = (e) => {
      if (typeof e.data === "string") {
        const n = JSON.parse(e.data);
        if (n.type === "history") state.scrollback.setEnd(n.end);
        else if (n.type === "exited") showError("The session exited (code " + n.code + "). Wake it to start it again.");
        else if (n.type === "error" || n.type === "lost") showError(n.message);
        return;
      }
      term.write(new Uint8Array(e.data));
    };
    ws.onclose = (e) => {
      if (state.ws !== ws) return;
      state.ws = null;
      if (e.code === 1008) unpaired("This browser's pairing was revoked. Run `hangar web` again to pair.");
    };
    if (!state.readOnly) term.focus();
  }

  function disconnectTerminal() {
    if (state.scrollback) state.scrollback.close();
    if (state.ws) {
      const ws = state.ws;
      state.ws = null;
      ws.close();
    }
  }

  function showError(text) {
    $("s-error").textContent = text || "";
  }

  // ---- views ----

  function route() {
    const m = location.hash.match(/^#\/s\/(.+)$/);
    const far = location.hash.match(/^#\/h\/([^/]+)\/(.+)$/);
    disconnectTerminal();
    showError("");
    // A review belongs to one session.
    $("diff").hidden = true;
    $("comment-form").hidden = true;
    review.comments = [];
    renderComments();
    if (m || far) {
      state.current = decodeURIComponent(m ? m[1] : far[2]);
      state.currentHost = far ? decodeURIComponent(far[1]) : null;
      $("list-view").hidden = true;
      $("session-view").hidden = false;
      $("back").hidden = false;
      renderSession();
      connectTerminal(state.currentHost, state.current);
    } else {
      state.current = null;
      state.currentHost = null;
      $("session-view").hidden = true;
      $("list-view").hidden = false;
      $("back").hidden = true;
      $("heading").textContent = "hangar";
      renderList();
    }
  }

  async function act(path, body) {
    showError("");
    try {
      await api("POST", "/api/sessions/" + encodeURIComponent(state.current) + path, body);
      return true;
    } catch (e) {
      showError(e.message);
      return false;
    }
  }

  // ---- fork (issue 30): the TUI's F, a split beside the session ----

  async function forkSession() {
    const b = $("fork");
    b.disabled = true;
    showError("");
    try {
      const v = await api("POST", "/api/sessions/" + encodeURIComponent(state.current) + "/fork", {});
      // The list knows the new session before its view opens.
      try {
        const [sessions, tabs] = await Promise.all([api("GET", "/api/sessions"), api("GET", "/api/tabs")]);
        update({ sessions, tabs });
      } catch (_) {
        // The live stream brings it anyway.
      }
      location.hash = "#/s/" + encodeURIComponent(v.id);
    } catch (e) {
      showError(e.message);
    } finally {
      b.disabled = false;
    }
  }

  // ---- the diff and review comments (issue 30) ----
  // Names and lines come with a `shown` form the server escaped (control
  // and bidi characters as \u{..}); they are set as text, never as HTML.

  const review = { files: null, tree: null, mergeBase: null, comments: [], at: null, file: null };

  function diffPath(suffix) {
    return "/api/sessions/" + encodeURIComponent(state.current) + suffix;
  }

  async function openDiff() {
    showError("");
    $("diff").hidden = false;
    $("diff-summary").textContent = "Reading the diff…";
    $("diff-files").replaceChildren();
    $("diff-lines").tBodies[0].replaceChildren();
    $("diff-file-name").hidden = true;
    let doc;
    try {
      doc = await api("GET", diffPath("/diff"));
    } catch (e) {
      $("diff-summary").textContent = e.message;
      return;
    }
    review.tree = doc.tree;
    review.mergeBase = doc.merge_base;
    review.files = doc.files;
    let adds = 0;
    let dels = 0;
    for (const f of doc.files) {
      adds += f.additions;
      dels += f.deletions;
    }
    $("diff-summary").textContent = "against " + doc.base + " · " + doc.files.length +
      " file(s), +" + adds + " -" + dels;
    $("diff-files").replaceChildren(...doc.files.map((f) => {
      const li = el("li");
      const b = el("button", "diff-file");
      b.type = "button";
      b.dataset.index = String(f.index);
      const name = f.old_shown ? f.old_shown + " → " + f.shown : f.shown;
      b.textContent = f.letter + " " + name + "  " + (f.binary ? "binary" : "+" + f.additions + " -" + f.deletions);
      b.addEventListener("click", () => openFile(f));
      li.appendChild(b);
      return li;
    }));
  }

  async function openFile(f) {
    review.file = f;
    const h = $("diff-file-name");
    h.textContent = f.shown;
    h.hidden = false;
    const body = $("diff-lines").tBodies[0];
    if (f.binary) {
      body.replaceChildren(lineRow({ kind: "header", shown: "binary file: not shown" }, null));
      return;
    }
    let doc;
    try {
      const q = "?tree=" + encodeURIComponent(review.tree) + "&merge_base=" + encodeURIComponent(review.mergeBase);
      doc = await api("GET", diffPath("/diff/" + f.index + q));
    } catch (e) {
      showError(e.message);
      return;
    }
    body.replaceChildren(...doc.lines.map((l) => lineRow(l, doc.path)));
  }

  function lineRow(l, path) {
    const tr = el("tr", l.kind);
    tr.appendChild(el("td", "num", l.old === null || l.old === undefined ? "" : l.old));
    tr.appendChild(el("td", "num", l.new === null || l.new === undefined ? "" : l.new));
    tr.appendChild(el("td", "text", l.shown));
    if (path !== null && typeof l.target === "number" && !state.readOnly) {
      tr.classList.add("commentable");
      tr.dataset.target = String(l.target);
      tr.addEventListener("click", () => {
        review.at = { file: path, line: l.target, shown: review.file.shown };
        $("comment-at").textContent = "Comment on " + review.file.shown + ":" + l.target;
        $("comment-form").hidden = false;
        $("comment-text").focus();
      });
    }
    return tr;
  }

  function renderComments() {
    $("comments").replaceChildren(...review.comments.map((c) => el("li", null, c.shown + ":" + c.line + ": " + c.text)));
    $("comments-send").hidden = review.comments.length === 0;
    $("comments-send").textContent = "Send " + review.comments.length + " comment(s) to the agent";
  }

  function wireDiff() {
    $("diff-open").addEventListener("click", openDiff);
    $("diff-close").addEventListener("click", () => {
      $("diff").hidden = true;
    });
    $("comment-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const text = $("comment-text").value.trim();
      if (!text || !review.at) return;
      review.comments.push({ file: review.at.file, line: review.at.line, text, shown: review.at.shown });
      $("comment-text").value = "";
      $("comment-form").hidden = true;
      renderComments();
    });
    $("comments-send").addEventListener("click", async () => {
      const comments = review.comments.map((c) => ({ file: c.file, line: c.line, text: c.text }));
      // One prompt for them all; kept when the agent refuses (mid-turn).
      if (await act("/review", { comments })) {
        review.comments = [];
        renderComments();
      }
    });
  }

  function wire() {
    $("back").addEventListener("click", () => {
      location.hash = "#/";
    });
    $("prompt-form").addEventListener("submit", async (e) => {
      e.preventDefault();
      const text = $("prompt").value;
      if (!text.trim()) return;
      $("send").disabled = true;
      if (await act("/send", { text })) $("prompt").value = "";
      $("send").disabled = false;
    });
    $("prompt").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && window.innerWidth >= 600) {
        e.preventDefault();
        $("prompt-form").requestSubmit();
      }
    });
    for (const b of document.querySelectorAll("[data-keys]")) {
      b.addEventListener("click", () => act("/keys", { keys: [b.dataset.keys] }));
    }
    for (const b of document.querySelectorAll("[data-action]")) {
      b.addEventListener("click", () => act("/" + b.dataset.action));
    }
    const n = $("notify");
    if ("Notification" in window && Notification.permission === "default") {
      n.hidden = false;
      n.addEventListener("click", async () => {
        await Notification.requestPermission();
        n.hidden = Notification.permission !== "default";
      });
    }
    wireDiff();
    $("fork").addEventListener("click", forkSession);
    window.addEventListener("hashchange", route);
  }

  async function start() {
    wire();
    try {
      const me = await api("GET", "/api/whoami");
      state.readOnly = !!me.read_only;
    } catch (_) {
      return;
    }
    document.body.classList.toggle("read-only", state.readOnly);
    if (state.readOnly) {
      $("controls").hidden = true;
      banner(READ_ONLY);
    }
    try {
      const [sessions, tabs] = await Promise.all([api("GET", "/api/sessions"), api("GET", "/api/tabs")]);
      update({ sessions, tabs });
    } catch (e) {
      banner(e.message);
    }
    listen();
    route();
    refreshFar();
    setInterval(refreshFar, 5000);
  }

  start();
})();
