// hangar web: a session's history above its terminal, read from the daemon a
// page at a time by line number (as the TUI's panes read it), shown over the
// terminal when the wheel or a finger scrolls back, and gone again when the
// view is scrolled back down to the bottom (or "Back to live" is pressed).
//
// xterm.js keeps no scrollback of its own: the daemon has the whole history,
// rewrapped for the session's width on every resize. The attach socket's
// `history` notices say which line is just above the screen; the view is
// frozen on line numbers, so output printed while a person reads moves
// nothing. Lines come with their SGR colours (no other escape): they are
// drawn as text nodes in styled spans, never as markup (DESIGN.md rule 11).
"use strict";

(function () {
  // Lines per request: a wheel notch or a swipe within it costs nothing.
  const PAGE = 500;
  // The view asks for the page above it when less than this many screens of
  // lines are left above what it shows.
  const AHEAD_SCREENS = 2;

  // xterm.js's default palette (its theme's 16 colours).
  const ANSI = [
    "#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
    "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#e5e5e5",
  ];

  function palette(i) {
    if (i < 16) return ANSI[i];
    if (i < 232) {
      const n = i - 16;
      const v = (c) => (c === 0 ? 0 : 55 + c * 40);
      return "rgb(" + v(Math.floor(n / 36)) + "," + v(Math.floor(n / 6) % 6) + "," + v(n % 6) + ")";
    }
    const g = 8 + (i - 232) * 10;
    return "rgb(" + g + "," + g + "," + g + ")";
  }

  // The pen an SGR sequence selects. hangar writes every change as a full
  // reset plus the attributes (`ESC[0;1;31m`), so each one stands alone.
  function plain() {
    return { fg: null, bg: null, bold: false, dim: false, italic: false, underline: false, inverse: false, hidden: false, strike: false };
  }

  function pen(params) {
    const p = plain();
    const parts = params.split(";");
    for (let i = 0; i < parts.length; i++) {
      const code = parts[i].split(":")[0];
      const n = code === "" ? 0 : Number(code);
      if (n === 0) Object.assign(p, plain());
      else if (n === 1) p.bold = true;
      else if (n === 2) p.dim = true;
      else if (n === 3) p.italic = true;
      else if (n === 4 || n === 21) p.underline = true;
      else if (n === 7) p.inverse = true;
      else if (n === 8) p.hidden = true;
      else if (n === 9) p.strike = true;
      else if (n >= 30 && n <= 37) p.fg = ANSI[n - 30];
      else if (n >= 90 && n <= 97) p.fg = ANSI[n - 90 + 8];
      else if (n >= 40 && n <= 47) p.bg = ANSI[n - 40];
      else if (n >= 100 && n <= 107) p.bg = ANSI[n - 100 + 8];
      else if (n === 38 || n === 48) {
        let color = null;
        if (parts[i + 1] === "5") {
          color = palette(Number(parts[i + 2]) & 255);
          i += 2;
        } else if (parts[i + 1] === "2") {
          color = "rgb(" + [2, 3, 4].map((k) => Number(parts[i + k]) & 255).join(",") + ")";
          i += 4;
        }
        if (n === 38) p.fg = color;
        else p.bg = color;
      }
    }
    return p;
  }

  // One history line (text with SGR sequences) as a row of styled spans.
  function row(line) {
    const div = document.createElement("div");
    div.className = "hl";
    let p = null;
    const re = /\x1b\[([0-9;:]*)m/g;
    let at = 0;
    const put = (text) => {
      if (!text) return;
      const span = document.createElement("span");
      span.textContent = text;
      if (p) {
        let fg = p.fg;
        let bg = p.bg;
        if (p.inverse) [fg, bg] = [bg || "#000000", fg || "#e6e6e6"];
        if (fg) span.style.color = fg;
        if (bg) span.style.backgroundColor = bg;
        if (p.bold) span.style.fontWeight = "bold";
        if (p.dim) span.style.opacity = "0.6";
        if (p.italic) span.style.fontStyle = "italic";
        const deco = [p.underline ? "underline" : "", p.strike ? "line-through" : ""].join(" ").trim();
        if (deco) span.style.textDecoration = deco;
        if (p.hidden) span.style.visibility = "hidden";
      }
      div.appendChild(span);
    };
    for (let m = re.exec(line); m; m = re.exec(line)) {
      put(line.slice(at, m.index));
      p = pen(m[1]);
      at = re.lastIndex;
    }
    // Anything else an escape could start is shown as text, never obeyed.
    put(line.slice(at));
    if (!div.firstChild) div.appendChild(document.createTextNode(""));
    return div;
  }

  // The scrollback of the terminal in `box` (the terminal's container):
  // `page(before, lines)` fetches a page, `term()` is the xterm.js terminal.
  function attach(box, page, term, onClose) {
    const view = document.createElement("div");
    view.id = "history";
    view.className = "history";
    view.hidden = true;
    view.tabIndex = -1;
    const lines = document.createElement("div");
    view.appendChild(lines);
    const live = document.createElement("button");
    live.id = "live";
    live.type = "button";
    live.className = "live";
    live.hidden = true;
    live.textContent = "Back to live \u2193";
    box.appendChild(view);
    box.appendChild(live);

    const s = {
      end: null, // the line just above the live screen (the socket's notices)
      open: false,
      loading: false,
      first: null, // the oldest line the view holds
      oldest: null, // the oldest line the daemon keeps
      generation: 0, // bumped on every close, so a late page is dropped
      touchY: null,
    };

    function lineHeight() {
      const r = lines.firstChild && lines.firstChild.getBoundingClientRect();
      return r && r.height > 0 ? r.height : 16;
    }

    // Whether scrolling back means history: not for a full-screen program,
    // nor one that asked for the mouse (xterm.js gives it the wheel).
    function wanted() {
      const t = term();
      return !!t && t.buffer.active.type === "normal" && t.modes.mouseTrackingMode === "none";
    }

    async function open(up) {
      if (s.open || s.loading) return;
      s.loading = true;
      const generation = s.generation;
      let p = null;
      try {
        p = await page(s.end, PAGE);
      } catch (_) {
        p = null;
      }
      s.loading = false;
      if (!p || generation !== s.generation || s.open) return;
      const t = term();
      const frag = document.createDocumentFragment();
      for (const l of p.lines) frag.appendChild(row(l));
      // The screen below it, as shown now.
      const buf = t.buffer.active;
      for (let i = 0; i < t.rows; i++) {
        const l = buf.getLine(buf.viewportY + i);
        const d = document.createElement("div");
        d.className = "hl screen";
        d.textContent = l ? l.translateToString(true) : "";
        frag.appendChild(d);
      }
      lines.replaceChildren(frag);
      s.first = p.start;
      s.oldest = p.first;
      s.open = true;
      view.hidden = false;
      live.hidden = false;
      const h = lineHeight();
      view.scrollTop = view.scrollHeight - view.clientHeight - Math.max(h * 3, up);
      more();
    }

    async function more() {
      if (!s.open || s.loading || s.first === null || s.first <= s.oldest) return;
      if (view.scrollTop > view.clientHeight * AHEAD_SCREENS) return;
      s.loading = true;
      const generation = s.generation;
      let p = null;
      try {
        p = await page(s.first, PAGE);
      } catch (_) {
        p = null;
      }
      s.loading = false;
      if (!p || generation !== s.generation) return;
      const frag = document.createDocumentFragment();
      // Lines renumbered by a resize's rewrap start above the view: none fit.
      const upto = Math.min(p.lines.length, Math.max(0, s.first - p.start));
      for (let i = 0; i < upto; i++) frag.appendChild(row(p.lines[i]));
      const before = view.scrollHeight;
      lines.insertBefore(frag, lines.firstChild);
      view.scrollTop += view.scrollHeight - before;
      s.first = upto > 0 ? p.start : p.first;
      s.oldest = p.first;
      more();
    }

    function close() {
      s.generation++;
      s.open = false;
      s.loading = false;
      view.hidden = true;
      live.hidden = true;
      lines.replaceChildren();
      if (onClose) onClose();
    }

    function atBottom() {
      return view.scrollTop + view.clientHeight >= view.scrollHeight - 2;
    }

    view.addEventListener("scroll", () => {
      if (!s.open) return;
      if (atBottom()) close();
      else more();
    });
    view.addEventListener("wheel", (e) => {
      // Down at the bottom already: back to live.
      if (s.open && e.deltaY > 0 && atBottom()) close();
    }, { passive: true });
    view.addEventListener("keydown", (e) => {
      if (e.key === "Escape" || e.key === "q") close();
    });
    live.addEventListener("click", close);

    // The wheel over the live terminal never reaches xterm.js, which has
    // no scrollback to move and would type arrow keys into the program
    // instead; up opens the view.
    box.addEventListener("wheel", (e) => {
      if (s.open || !wanted()) return;
      e.preventDefault();
      e.stopPropagation();
      if (e.deltaY < 0) open(-e.deltaY);
    }, { capture: true, passive: false });

    // A finger pulling the terminal down opens the view, and the same
    // gesture goes on scrolling it; later ones scroll it natively.
    box.addEventListener("touchstart", (e) => {
      s.touchY = !s.open && e.touches.length === 1 ? e.touches[0].clientY : null;
    }, { capture: true, passive: true });
    box.addEventListener("touchmove", (e) => {
      if (s.touchY === null || e.touches.length !== 1) return;
      const y = e.touches[0].clientY;
      const dy = y - s.touchY;
      if (!s.open) {
        if (dy > 10 && wanted()) {
          e.preventDefault();
          open(dy);
        }
        return;
      }
      e.preventDefault();
      view.scrollTop -= dy;
      s.touchY = y;
    }, { capture: true, passive: false });
    box.addEventListener("touchend", () => {
      s.touchY = null;
    }, { capture: true, passive: true });

    return {
      // The socket's `history` notice: the line just above the screen.
      setEnd(end) {
        s.end = typeof end === "number" ? end : null;
      },
      close() {
        if (s.open || s.loading) close();
      },
      isOpen() {
        return s.open;
      },
    };
  }

  window.HangarScrollback = { attach, row };
})();
