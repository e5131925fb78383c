// How the console writes times, money and counts: the CLI's words, so a page and a terminal agree.
export { humanAge } from "../../api/age.ts";
export { formatDuration } from "../../views/duration.ts";

export function money(dollars: number, digits = 2): string {
  return `$${dollars.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })}`;
}

export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}
