// Slash commands in the chat's prompt box: typing "/" at the start of the
// prompt lists the commands of agent.commands (the built-ins, the user's and
// the project's command files), filtered as one types the name; Tab or Enter
// takes the highlighted one, the arrows move, Escape closes the list. The
// server expands "/name arguments" itself (agent.run), so the page sends the
// prompt as typed.
import type { Ctx } from "./ctx";
import { requests, type CommandInfo } from "./protocol";

/** A command the prompt box offers. */
export interface SlashItem {
  name: string;
  description: string;
  hint?: string;
  source: string;
}

/** The commands the prompt box offers: agent.commands of the first project. */
export async function slashCommands(ctx: Ctx): Promise<SlashItem[]> {
  return slashItems((await (await ctx.ready()).send(requests.commands, {})).commands);
}

/** The items of agent.commands' list, without the files that cannot run. */
export function slashItems(list: CommandInfo[]): SlashItem[] {
  return list.filter((c) => !c.error).map((c) => ({ name: c.name, description: c.description, hint: c.argumentHint, source: c.source }));
}

// The page's matcher, as source: the page runs it, and so does slashMatches
// (a bundler may rename a function, never a string).
const matchesSource = `function slashMatches(text, items) {
  const m = /^\\/([\\w.:-]*)$/.exec(text);
  return m ? items.filter((c) => c.name.startsWith(m[1])) : undefined;
}`;

/** The items matching text, the prompt box's whole text, while it is "/" and the start of a name; undefined otherwise. */
export const slashMatches = new Function(`${matchesSource}\nreturn slashMatches;`)() as (text: string, items: SlashItem[]) => SlashItem[] | undefined;

/** The list's style, for the page's style element. */
export const slashStyle = `
#slash { border: 1px solid var(--vscode-editorSuggestWidget-border, var(--vscode-input-border, transparent)); background: var(--vscode-editorSuggestWidget-background, var(--vscode-input-background)); max-height: 12em; overflow-y: auto; }
#slash[hidden] { display: none; }
#slash .option { padding: 2px 6px; cursor: pointer; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
#slash .option.active { background: var(--vscode-editorSuggestWidget-selectedBackground, var(--vscode-list-activeSelectionBackground)); color: var(--vscode-list-activeSelectionForeground, inherit); }
#slash .hint, #slash .desc { opacity: .7; }
`;

/**
 * The list's script, for the page's script element: it expects the page's
 * vscode (acquireVsCodeApi) and prompt (the textarea), asks the extension
 * for the commands ({type: "commands"}) when the prompt becomes "/", and
 * reads its answer ({type: "commands", list}).
 */
export const slashScript = `
const slash = document.createElement("div");
slash.id = "slash"; slash.hidden = true; slash.setAttribute("role", "listbox");
prompt.parentNode.insertBefore(slash, prompt);
let slashItems = [], slashShown = [], slashAt = 0;
${matchesSource}
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
    const name = document.createElement("b"); name.textContent = "/" + c.name; el.appendChild(name);
    if (c.hint) { const h = document.createElement("span"); h.className = "hint"; h.textContent = " " + c.hint; el.appendChild(h); }
    const d = document.createElement("span"); d.className = "desc"; d.textContent = " " + c.description + " (" + c.source + ")"; el.appendChild(d);
    el.addEventListener("mousedown", (e) => { e.preventDefault(); slashTake(i); });
    slash.appendChild(el);
  });
  slash.hidden = slashShown.length === 0;
}
function slashTake(i) {
  const c = slashShown[i];
  if (!c) return;
  prompt.value = "/" + c.name + " ";
  slash.hidden = true; slashShown = [];
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
    e.preventDefault(); e.stopImmediatePropagation(); slashTake(slashAt);
  } else if (e.key === "Escape") {
    slash.hidden = true;
  }
});
window.addEventListener("message", (e) => { if (e.data.type === "commands") { slashItems = e.data.list; slashUpdate(); } });
`;
