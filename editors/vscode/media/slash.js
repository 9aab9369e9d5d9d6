// The chat's prompt box completes slash commands (src/slash.ts): typing "/"
// at the start of the prompt lists the commands of agent.commands (the
// built-ins, the user's and the project's command files), filtered as one
// types the name; Tab or Enter takes the highlighted one, the arrows move,
// Escape closes the list. It runs after chat.js, whose vscode (the page's
// acquireVsCodeApi) and prompt (the textarea) it uses; it asks the extension
// for the commands ({type: "commands"}) when the prompt becomes "/" and reads
// its answer ({type: "commands", list}). The server expands "/name arguments"
// itself (agent.run), so the page sends the prompt as typed.
/* global vscode, prompt */
const slash = document.createElement("div");
slash.id = "slash";
slash.hidden = true;
slash.setAttribute("role", "listbox");
prompt.parentNode.insertBefore(slash, prompt);
let slashItems = [],
  slashShown = [],
  slashAt = 0;
function slashMatches(text, items) {
  const m = /^\/([\w.:-]*)$/.exec(text);
  return m ? items.filter((c) => c.name.startsWith(m[1])) : undefined;
}
function slashUpdate() {
  if (prompt.value === "/") vscode.postMessage({ type: "commands" });
  slashShown = slashMatches(prompt.value, slashItems) || [];
  slashAt = Math.max(0, Math.min(slashAt, slashShown.length - 1));
  slash.textContent = "";
  slashShown.forEach((c, i) => {
    const el = document.createElement("div");
    el.className = "option" + (i === slashAt ? " active" : "");
    el.setAttribute("role", "option");
    el.dataset.name = c.name;
    const name = document.createElement("b");
    name.textContent = "/" + c.name;
    el.appendChild(name);
    if (c.hint) {
      const h = document.createElement("span");
      h.className = "hint";
      h.textContent = " " + c.hint;
      el.appendChild(h);
    }
    const d = document.createElement("span");
    d.className = "desc";
    d.textContent = " " + c.description + " (" + c.source + ")";
    el.appendChild(d);
    el.addEventListener("mousedown", (e) => {
      e.preventDefault();
      slashTake(i);
    });
    slash.appendChild(el);
  });
  slash.hidden = slashShown.length === 0;
}
function slashTake(i) {
  const c = slashShown[i];
  if (!c) return;
  prompt.value = "/" + c.name + " ";
  slash.hidden = true;
  slashShown = [];
  prompt.focus();
}
prompt.addEventListener("input", slashUpdate);
prompt.addEventListener("keydown", (e) => {
  if (slash.hidden) return;
  if (e.key === "ArrowDown" || e.key === "ArrowUp") {
    e.preventDefault();
    slashAt = (slashAt + (e.key === "ArrowDown" ? 1 : slashShown.length - 1)) % slashShown.length;
    slashUpdate();
  } else if (e.key === "Tab" || (e.key === "Enter" && !e.ctrlKey && !e.metaKey)) {
    e.preventDefault();
    e.stopImmediatePropagation();
    slashTake(slashAt);
  } else if (e.key === "Escape") {
    slash.hidden = true;
  }
});
window.addEventListener("message", (e) => {
  if (e.data.type === "commands") {
    slashItems = e.data.list;
    slashUpdate();
  }
});
