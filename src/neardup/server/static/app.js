// The neardup web page: plain JavaScript over the JSON API of the same server.
// Every piece of user data goes into the page as text nodes, never parsed as HTML.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);

  // ---- small helpers ------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k === "dataset") Object.assign(node.dataset, v);
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v);
    }
    for (const c of children) {
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  function pct(x) {
    const p = Math.round(x * 1000) / 10;
    return (Number.isInteger(p) ? p.toFixed(0) : p.toFixed(1)) + "%";
  }

  function plural(n, one, many) {
    return n + " " + (n === 1 ? one : many);
  }

  function showError(message) {
    const box = $("error");
    box.textContent = message.charAt(0).toUpperCase() + message.slice(1);
    box.hidden = false;
  }

  function clearError() {
    $("error").hidden = true;
    $("error").textContent = "";
  }

  // ---- API key ------------------------------------------------------------------------------
  // Where the service needs a key it answers 401: the page then asks for one, keeps it in
  // sessionStorage (this tab only, until it is closed) and sends it with every request.
  const KEY_ITEM = "neardup-api-key";

  function apiKey() {
    try {
      return sessionStorage.getItem(KEY_ITEM) || "";
    } catch (e) {
      return "";
    }
  }

  function setApiKey(key) {
    try {
      if (key) sessionStorage.setItem(KEY_ITEM, key);
      else sessionStorage.removeItem(KEY_ITEM);
    } catch (e) {
      // storage refused (private mode): the key lasts until the page is left
    }
    memoryKey = key;
    $("key-change").hidden = !key;
  }
  let memoryKey = apiKey();

  function askForKey(message) {
    $("key-message").textContent = message;
    $("key-form").hidden = false;
    $("key-input").focus();
  }

  // The API answers errors as {"detail": "message"}; turn any failure into a readable message.
  // a file from the service, saved by the browser (the key goes in a header, so a plain link
  // would not do for a service that needs one)
  async function download(path, name) {
    const init = { headers: {} };
    const key = apiKey() || memoryKey;
    if (key) init.headers["Authorization"] = "Bearer " + key;
    const response = await fetch(path, init);
    if (!response.ok) {
      let detail = response.status + " " + response.statusText;
      try {
        detail = (await response.json()).detail || detail;
      } catch (e) {
        // not JSON: the status says it
      }
      throw new Error(detail);
    }
    const url = URL.createObjectURL(await response.blob());
    const a = el("a", { href: url, download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  async function api(method, path, body) {
    const init = { method, headers: {} };
    const key = apiKey() || memoryKey;
    if (key) init.headers["Authorization"] = "Bearer " + key;
    if (body instanceof FormData) {
      init.body = body;
    } else if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (e) {
      throw new Error("The server cannot be reached (" + e.message + ").");
    }
    let data = null;
    try {
      data = await response.json();
    } catch (e) {
      data = null;
    }
    if (!response.ok) {
      const detail = data && typeof data.detail === "string" ? data.detail
        : response.status + " " + response.statusText;
      if (response.status === 401) {
        askForKey(key ? "The API key was not accepted: enter the current one."
          : "This service needs an API key: enter it to go on.");
      } else if (response.status === 403 && / role/.test(detail)) {
        askForKey("The API key in use may not do this: enter a key with the write role.");
      }
      const error = new Error(detail);
      error.status = response.status;
      throw error;
    }
    return data;
  }

  $("key-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const key = $("key-input").value.trim();
    if (!key) {
      $("key-input").focus();
      return;
    }
    setApiKey(key);
    $("key-input").value = "";
    $("key-form").hidden = true;
    clearError();
    refreshStatus();
  });
  $("key-forget").addEventListener("click", () => {
    setApiKey("");
    $("key-input").value = "";
    $("key-form").hidden = true;
    clearError();
    refreshStatus();
  });
  $("key-change").addEventListener("click", () => {
    askForKey("Change or forget the API key this page sends.");
  });
  $("key-change").hidden = !memoryKey;

  // Python reports offsets in code points; JavaScript strings count UTF-16 units.
  function codePointToUnit(text) {
    const map = [0];
    let unit = 0;
    for (const ch of text) {
      unit += ch.length;
      map.push(unit);
    }
    return map;
  }

  // Fill `container` with `text`, wrapping the [start, end) code-point ranges in <mark>.
  // ``text`` with ``ranges`` (code point offsets) marked; with ``diff``, the other way round:
  // the words outside the ranges (what differs from the other text) are marked
  function renderMarked(container, text, ranges, diff) {
    container.replaceChildren();
    const toUnit = codePointToUnit(text);
    const sorted = ranges.map((r) => [r[0], r[1]]).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    const merged = [];
    for (const r of sorted) {
      const last = merged[merged.length - 1];
      if (last && r[0] <= last[1]) last[1] = Math.max(last[1], r[1]);
      else merged.push(r);
    }
    const gap = (a, b) => {  // text between two ranges: marked, blanks at its edges apart
      const part = text.slice(a, b);
      if (!diff || !part.trim()) {
        if (part) container.append(document.createTextNode(part));
        return;
      }
      const lead = part.length - part.trimStart().length;
      const tail = part.length - part.trimEnd().length;
      if (lead) container.append(document.createTextNode(part.slice(0, lead)));
      container.append(el("mark", { class: "diff" }, part.slice(lead, part.length - tail)));
      if (tail) container.append(document.createTextNode(part.slice(part.length - tail)));
    };
    let pos = 0;
    for (const [s, e] of merged) {
      const a = toUnit[s], b = toUnit[e];
      if (a > pos) gap(pos, a);
      const shared = text.slice(a, b);
      container.append(diff ? document.createTextNode(shared) : el("mark", {}, shared));
      pos = b;
    }
    if (pos < text.length) gap(pos, text.length);
  }

  function sharedNote(passages) {
    const words = passages.reduce((n, p) => n + p.words, 0);
    return passages.length === 0 ? "no shared passage of several words"
      : plural(passages.length, "shared passage", "shared passages") + ", " +
        plural(words, "word", "words");
  }

  // ---- tabs ---------------------------------------------------------------------------------
  function selectTab(name) {
    for (const t of ["check", "upload"]) {
      const on = t === name;
      $("tab-" + t).classList.toggle("active", on);
      $("tab-" + t).setAttribute("aria-selected", on ? "true" : "false");
      $("panel-" + t).hidden = !on;
    }
    clearError();
  }
  $("tab-check").addEventListener("click", () => selectTab("check"));
  $("tab-upload").addEventListener("click", () => selectTab("upload"));

  // ---- index status -------------------------------------------------------------------------
  async function refreshStatus() {
    try {
      const s = await api("GET", "/stats");
      $("index-status").textContent = plural(s.documents, "text", "texts") + " in the index · " +
        "texts count as repeats from " + pct(s.threshold) + " similarity";
      $("check-threshold").placeholder = String(s.threshold);
      const m = /^word:(\d+)/.exec(s.shingle || "");
      if (m) {
        $("similarity-note").textContent = "Similarity is the share of " + m[1] +
          "-word phrases two texts have in common (Jaccard similarity).";
      }
    } catch (e) {
      $("index-status").textContent = e.status === 401 ? "An API key is needed to use the index."
        : "The index cannot be reached: " + e.message;
    }
  }

  // ---- (a) check a text ---------------------------------------------------------------------
  let lastCheck = null;

  function showCheckMatch(i) {
    const text = lastCheck.text;
    const m = lastCheck.entries[i];
    for (const li of $("check-matches").children) {
      li.classList.toggle("selected", Number(li.dataset.index) === i);
    }
    $("check-compare").hidden = false;
    if (m.text === null || m.text === undefined) {
      renderMarked($("check-left"), text, []);
      $("check-right").replaceChildren(el("em", {}, "The index keeps no text for this match."));
    } else {
      // a near-duplicate: what differs is marked; a text it reuses: the passages it shares
      const near = m.share === undefined;
      renderMarked($("check-left"), text, m.passages.map((p) => p.a), near);
      renderMarked($("check-right"), m.text, m.passages.map((p) => p.b), near);
    }
    $("check-right-title").textContent = m.id + " · " + (m.share === undefined
      ? pct(m.similarity) + " similar · the words that differ are marked"
      : "its passages are " + pct(m.share) + " of your text");
  }

  async function runCheck(add) {
    clearError();
    const text = $("check-text").value;
    if (!text.trim()) {
      showError("Paste a text to check first.");
      return;
    }
    const body = { text };
    const th = $("check-threshold").value.trim();
    if (th) body.threshold = Number(th);
    const id = $("check-id").value.trim();
    if (id) body.id = id;
    if (add) body.add = true;
    $("check-button").disabled = true;
    try {
      const result = await api("POST", "/check", body);
      lastCheck = { text, result,
        entries: result.matches.concat((result.reused || []).filter(
          (r) => !result.matches.some((m) => m.id === r.id))) };
      renderCheck(result, add);
      if (add) refreshStatus();
    } catch (e) {
      // a stale result under an error would mislead; a refused add leaves the check standing
      if (!(add && (e.status === 401 || e.status === 403))) $("check-result").hidden = true;
      showError(e.message);
    } finally {
      $("check-button").disabled = false;
    }
  }

  function renderCheck(result, added) {
    $("check-result").hidden = false;
    const verdict = $("check-verdict");
    const n = result.matches.length;
    const reused = lastCheck.entries.slice(n);
    const common = result.common || [];
    const passagesNote = result.passages_indexed
      ? " and no passage of " + result.min_passage_words + " words or more is shared" : "";
    verdict.className = "verdict " + (result.unique ? "ok" : "warn");
    let head, note;
    if (result.unique) {
      head = "Unique";
      note = " · nothing in the index reaches " + pct(result.threshold) + " similarity" +
        passagesNote;
    } else if (n === 0 && reused.length === 0 && common.length > 0) {
      head = "Shares only common passages";
      note = " · " + plural(common.length, "passage", "passages") + " of this text " +
        (common.length === 1 ? "is" : "are") + " found in many indexed texts; nothing else " +
        "is shared";
    } else if (n === 0 && reused.length === 0) {
      head = "Not checked completely";
      note = " · nothing found in the texts compared, but the text shares phrases with more " +
        "indexed texts than one check compares: try a shorter text";
    } else if (n > 0) {
      // the verdict names the closest text first
      const best = result.matches[0];
      head = "A near-duplicate of " + best.id + " (" + pct(best.similarity) + " similar)";
      note = (n > 1 ? " and of " + plural(n - 1, "more text", "more texts") : "") +
        " · repeats " + plural(n, "text", "texts") + " from the index (" +
        pct(result.threshold) + " similarity or more)" +
        (reused.length ? "; passages of " + plural(reused.length, "more text", "more texts") +
          " reused" : "");
    } else {
      const most = Math.max(...reused.map((r) => r.share));
      const names = reused.slice(0, 3).map((r) => r.id).join(", ");
      head = "Reuses passages of " + plural(reused.length, "text", "texts");
      note = ": " + names + (reused.length > 3 ? " and more" : "") + " · up to " + pct(most) +
        " of this text" +
        (result.reused_capped ? " (more passages were found than are shown)" : "");
    }
    if (common.length > 0 && (n > 0 || reused.length > 0)) {
      note += "; " + plural(common.length, "common passage", "common passages");
    }
    verdict.replaceChildren(el("strong", {}, head), el("span", { class: "muted" }, note));
    const units = codePointToUnit(lastCheck.text);
    $("check-common").hidden = common.length === 0;
    $("check-common-list").replaceChildren(...common.map((p) => el("li",
      { dataset: { testid: "common-item" } },
      el("q", {}, lastCheck.text.slice(units[p.a[0]], units[p.a[1]])),
      el("span", { class: "muted small" }, " · " + plural(p.words, "word", "words") +
        ", in about " + plural(p.texts, "indexed text", "indexed texts") + " (e.g. " +
        p.example + ")"))));
    $("add-row").hidden = !result.unique;
    $("add-message").textContent = result.added ? "Added to the index as “" +
      $("check-id").value.trim() + "”." : "";
    $("add-button").disabled = result.added;
    const list = $("check-matches");
    list.replaceChildren();
    lastCheck.entries.forEach((m, i) => {
      const li = el("li", { dataset: { index: String(i), testid: "match-item", id: m.id } });
      const btn = el("button", { type: "button", class: "match" },
        el("span", { class: "pct" }, m.share === undefined ? pct(m.similarity)
          : pct(m.share) + " reused"),
        el("span", { class: "id" }, m.id),
        el("span", { class: "muted small" }, m.text === null || m.text === undefined ? ""
          : sharedNote(m.passages)));
      btn.addEventListener("click", () => showCheckMatch(i));
      li.append(btn);
      list.append(li);
    });
    $("check-compare").hidden = true;
    if (lastCheck.entries.length > 0) showCheckMatch(0);
  }

  $("check-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    runCheck(false);
  });
  $("add-button").addEventListener("click", () => {
    if (!$("check-id").value.trim()) {
      showError("Give the text an id (the field next to the threshold) to add it.");
      $("check-id").focus();
      return;
    }
    runCheck(true);
  });

  // ---- (b) upload a collection --------------------------------------------------------------
  let collection = null;

  function docLabel(id) {
    return collection && collection.id_field === null ? "line " + id : id;
  }

  async function showPair(a, b, button) {
    clearError();
    for (const x of document.querySelectorAll("#clusters .member.selected")) {
      x.classList.remove("selected");
    }
    if (button) button.classList.add("selected");
    try {
      const q = new URLSearchParams({ a, b });
      const p = await api("GET", "/collections/" + encodeURIComponent(collection.collection_id) +
        "/pair?" + q.toString());
      $("pair-compare").hidden = false;
      $("pair-title").replaceChildren(
        el("strong", {}, p.similarity === null ? "Not compared" : pct(p.similarity) + " similar"),
        el("span", { class: "muted" }, " · " + sharedNote(p.passages)));
      $("pair-left-title").textContent = docLabel(p.a.id) + " (kept)";
      $("pair-right-title").textContent = docLabel(p.b.id);
      renderMarked($("pair-left"), p.a.text, p.passages.map((x) => x.a));
      renderMarked($("pair-right"), p.b.text, p.passages.map((x) => x.b));
    } catch (e) {
      showError(e.message);
    }
  }

  for (const btn of document.querySelectorAll("#upload-downloads button")) {
    btn.addEventListener("click", async () => {
      clearError();
      if (!collection) return;
      const what = btn.dataset.what, format = btn.dataset.format;
      const stem = (collection.filename || "collection").replace(/\.[^.]*$/, "");
      try {
        await download("/collections/" + encodeURIComponent(collection.collection_id) +
          "/export?" + new URLSearchParams({ what, format }).toString(),
          stem + "-" + (what === "kept" ? "deduplicated" : "groups") + "." + format);
      } catch (e) {
        showError(e.message);
      }
    });
  }

  function renderCollection(c) {
    collection = c;
    $("upload-result").hidden = false;
    $("pair-compare").hidden = true;
    const nc = c.clusters.length;
    const summary = $("upload-summary");
    summary.className = "verdict " + (nc ? "warn" : "ok");
    summary.replaceChildren(
      el("strong", {}, nc ? plural(nc, "group", "groups") + " of repeated texts"
        : "No repeated texts"),
      el("span", { class: "muted" }, " · " + plural(c.documents, "text", "texts") + " read, " +
        plural(c.duplicates, "repeat", "repeats") + " of a kept text, threshold " +
        pct(c.threshold)));

    const sk = $("upload-skipped");
    const reasons = Object.entries(c.skipped);
    sk.hidden = reasons.length === 0;
    sk.replaceChildren();
    if (reasons.length) {
      const total = reasons.reduce((n, [, v]) => n + v, 0);
      sk.append(el("strong", {}, plural(total, "record", "records") + " skipped: "),
        reasons.map(([r, n]) => r.replaceAll("_", " ").replace("json", "JSON") +
          ": " + n).join(", "));
      const ul = el("ul", { class: "examples" });
      for (const ex of c.skipped_examples) {
        ul.append(el("li", { dataset: { testid: "skip-example" } }, "line " + ex.line + ": " +
          ex.message));
      }
      sk.append(ul);
    }

    const box = $("clusters");
    box.replaceChildren();
    if (nc === 0) box.append(el("p", { class: "muted" }, "Every text is unique."));
    for (const cl of c.clusters) {
      const card = el("div", { class: "cluster", dataset: { testid: "cluster",
        cluster: String(cl.cluster) } });
      card.append(el("div", { class: "cluster-head" },
        el("strong", {}, plural(cl.size, "text", "texts")),
        el("span", { class: "muted" }, " · kept: " + docLabel(cl.representative))));
      const ul = el("ul", { class: "members" });
      for (const m of cl.members) {
        const isRep = m.id === cl.representative;
        const btn = el("button", { type: "button", class: "member" + (isRep ? " rep" : ""),
          dataset: { testid: isRep ? "member-rep" : "member-pair", id: m.id } },
        el("span", { class: "id" }, docLabel(m.id)),
        el("span", { class: "title", dataset: { testid: "member-title" } }, m.title || ""),
        el("span", { class: "pct" }, isRep ? "kept" : pct(m.similarity_to_representative)));
        if (isRep) btn.disabled = true;
        else btn.addEventListener("click", () => showPair(cl.representative, m.id, btn));
        ul.append(el("li", {}, btn));
      }
      card.append(ul);
      box.append(card);
    }
  }

  $("upload-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearError();
    const file = $("upload-file").files[0];
    if (!file) {
      showError("Choose a CSV or JSONL file first.");
      return;
    }
    const form = new FormData();
    form.append("file", file, file.name);
    form.append("text_field", $("upload-text-field").value.trim() || "text");
    const idf = $("upload-id-field").value.trim();
    if (idf) form.append("id_field", idf);
    form.append("threshold", $("upload-threshold").value || "0.8");
    form.append("cluster", $("upload-cluster").value);
    $("upload-button").disabled = true;
    $("upload-button").textContent = "Working…";
    try {
      renderCollection(await api("POST", "/collections", form));
    } catch (e) {
      $("upload-result").hidden = true;
      showError(e.message);
    } finally {
      $("upload-button").disabled = false;
      $("upload-button").textContent = "Find duplicates";
    }
  });

  refreshStatus();
})();
