// Slash commands in the chat's prompt box: the list media/slash.js shows
// when "/" starts the prompt, from agent.commands (the built-ins, the user's
// and the project's command files). The server expands "/name arguments"
// itself (agent.run), so the page sends the prompt as typed.
import type { Ctx } from "./ctx";
import { requests, type CommandInfo } from "./protocol";

/** A command the prompt box offers. */
export interface SlashItem {
  name: string;
  description: string;
  hint?: string | undefined;
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
