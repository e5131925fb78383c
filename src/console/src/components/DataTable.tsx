// A table as every page draws one: scrollable on narrow screens, column headers with their scope, and
// numbers aligned right.
import type { ComponentChildren } from "preact";

export interface Column {
  label: string;
  numeric?: boolean;
  title?: string;
}

export function DataTable(props: { columns: (string | Column)[]; label?: string; labelledBy?: string; testId?: string; class?: string; busy?: boolean; children: ComponentChildren }) {
  const columns = props.columns.map((c) => (typeof c === "string" ? { label: c } : c));
  return (
    <div class="table-wrap">
      <table class={props.class} aria-label={props.label} aria-labelledby={props.labelledBy} aria-busy={props.busy} data-testid={props.testId}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.label} scope="col" class={c.numeric ? "num" : undefined} title={c.title}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}
