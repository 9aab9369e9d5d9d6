// The chat view's page (chat.ts builds its HTML; the extension renders every
// item, this script only places them): the transcript, the session picker,
// the prompt box with Send and Stop. It posts the extension what the user
// does (chat.ts's FromPage) and shows what it is sent (ToPage).
// @ts-check
/* global acquireVsCodeApi */
const vscode = acquireVsCodeApi();
const log = /** @type {HTMLElement} */ (document.getElementById("log"));
const select = /** @type {HTMLSelectElement} */ (document.getElementById("session"));
const stop = /** @type {HTMLButtonElement} */ (document.getElementById("stop"));

// The transcript ----------------------------------------------------------------

/** Puts an item in its place: replaces the element of its id, else appends it; a row the user opened stays open. */
function put(item) {
  let el = document.getElementById(item.id);
  if (!el) {
    el = document.createElement("div");
    el.id = item.id;
    log.appendChild(el);
  }
  const open = el.querySelector("details[open]") !== null;
  el.innerHTML = item.html;
  if (open) {
    const d = el.querySelector("details");
    if (d) d.open = true;
  }
}

/** Shows session in the picker, titled (never its id) until the list of sessions names it. */
function setSession(session, title) {
  let option = [...select.options].find((o) => o.value === session);
  if (session && !option) {
    option = new Option(title || "This session", session);
    select.add(option);
  } else if (option && session && title && option.dataset.listed !== "true") {
    option.text = title;
  }
  select.value = session;
}

/** The page's handling of each message of the extension, by type. */
const on = {
  reset(m) {
    log.innerHTML = "";
    m.items.forEach(put);
    setSession(m.session, m.title);
  },
  items(m) {
    m.items.forEach(put);
  },
  state(m) {
    stop.hidden = !m.running;
    const mode = document.getElementById("mode");
    if (mode) mode.textContent = m.mode;
    setSession(m.session, m.title);
    document.body.dataset.running = String(m.running);
    document.body.dataset.session = m.session;
  },
  processes(m) {
    const section = /** @type {HTMLElement} */ (document.getElementById("processes"));
    section.innerHTML = m.html;
    section.hidden = m.html === "";
  },
  sessions(m) {
    select.length = 1;
    for (const s of m.list) {
      const o = new Option(s.label, s.session);
      o.dataset.listed = "true";
      select.add(o);
    }
    setSession(m.current, m.title);
  },
};

/** Retry goes with the last prompt only (rewind.ts). */
function markLastPrompt() {
  const retries = [...log.querySelectorAll('[data-rewind="retry"]')];
  retries.forEach((b, i) => /** @type {HTMLElement} */ (b.hidden = i !== retries.length - 1));
}

window.addEventListener("message", (e) => {
  const m = e.data;
  const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 20;
  on[m.type]?.(m);
  markLastPrompt();
  if (atEnd) log.scrollTop = log.scrollHeight;
});

log.addEventListener("click", (e) => {
  const target = /** @type {Element} */ (e.target);
  const a = target.closest("a[data-open], a[data-path]");
  if (a instanceof HTMLElement) {
    e.preventDefault();
    vscode.postMessage(a.dataset.open ? { type: "open", uri: a.dataset.open } : { type: "openPath", path: a.dataset.path });
  }
  const again = target.closest("[data-resend]");
  if (again instanceof HTMLElement) {
    e.preventDefault();
    vscode.postMessage({ type: "send", text: again.dataset.resend });
  }
  const rw = target.closest("[data-rewind]");
  if (rw instanceof HTMLElement) {
    e.preventDefault();
    vscode.postMessage({ type: "rewind", action: rw.dataset.rewind, prompt: Number(rw.dataset.prompt) });
  }
  const r = target.closest("[data-review]");
  if (r instanceof HTMLElement) {
    e.preventDefault();
    const d = r.dataset;
    vscode.postMessage({ type: "review", action: d.review, id: Number(d.id), ...(d.file !== undefined && { file: Number(d.file), key: d.key }) });
  }
  const plan = target.closest("[data-run-plan]");
  if (plan instanceof HTMLButtonElement) {
    e.preventDefault();
    plan.disabled = true; // once: the run it starts shows below
    vscode.postMessage({ type: "runPlan", session: plan.dataset.runPlan });
  }
});

// The background processes of the session shown, each with Stop (processes.ts).
document.getElementById("processes")?.addEventListener("click", (e) => {
  const b = /** @type {Element} */ (e.target).closest("[data-stop-process]");
  if (b instanceof HTMLButtonElement) {
    b.disabled = true;
    vscode.postMessage({ type: "stopProcess", session: b.dataset.session, id: b.dataset.stopProcess });
  }
});

// The session picker ----------------------------------------------------------

select.addEventListener("focus", () => vscode.postMessage({ type: "sessions" }));
select.addEventListener("change", () => vscode.postMessage({ type: "pick", session: select.value }));
document.getElementById("new")?.addEventListener("click", () => vscode.postMessage({ type: "pick", session: "" }));
document.getElementById("mode")?.addEventListener("click", () => vscode.postMessage({ type: "mode" }));

// The prompt box: Ctrl+Enter or Send sends it. A completion (e.g. of / commands)
// hooks in here: keydown handlers registered before submit's see the key first.

const prompt = /** @type {HTMLTextAreaElement} */ (document.getElementById("prompt"));

// Images pasted or dropped in the box go with the next prompt, as base64
// data (agent.run's images); Escape removes them.

/** @type {{ data: string, mimeType: string }[]} */
let images = [];
const attached = /** @type {HTMLElement} */ (document.getElementById("attached"));

function showAttached() {
  attached.hidden = images.length === 0;
  attached.textContent = images.length ? `${images.length} ${images.length === 1 ? "image" : "images"} attached (Escape removes)` : "";
}

/** @param {FileList} files @returns {boolean} whether any was an image */
function attach(files) {
  const found = [...files].filter((f) => f.type.startsWith("image/"));
  for (const f of found) {
    const r = new FileReader();
    r.onload = () => {
      const [head, data] = String(r.result).split(",");
      images.push({ data, mimeType: head.slice(5).split(";")[0] });
      showAttached();
    };
    r.readAsDataURL(f);
  }
  return found.length > 0;
}

prompt.addEventListener("paste", (e) => {
  if (e.clipboardData && attach(e.clipboardData.files)) e.preventDefault();
});
prompt.addEventListener("dragover", (e) => e.preventDefault());
prompt.addEventListener("drop", (e) => {
  if (e.dataTransfer && attach(e.dataTransfer.files)) e.preventDefault();
});
prompt.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && images.length) {
    images = [];
    showAttached();
  }
});

function submit() {
  const text = prompt.value;
  if (!text.trim()) return;
  prompt.value = "";
  vscode.postMessage({ type: "send", text, ...(images.length && { images }) });
  images = [];
  showAttached();
}

document.getElementById("send")?.addEventListener("click", submit);
prompt.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && !e.defaultPrevented) {
    e.preventDefault();
    submit();
  }
});
stop.addEventListener("click", () => vscode.postMessage({ type: "stop" }));

vscode.postMessage({ type: "ready" });
