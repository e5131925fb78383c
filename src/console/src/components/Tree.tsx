// `slipway describe cluster` as a page: the cluster's objects as an indented tree with READY, REASON,
// SINCE and MESSAGE.
import { humanAge } from "../format.ts";
import type { TreeNode } from "../../../views/describe.ts";
import { DataTable } from "./DataTable.tsx";
import { Phase } from "./Phase.tsx";

function rows(node: TreeNode, depth: number, out: { node: TreeNode; depth: number }[]): { node: TreeNode; depth: number }[] {
  out.push({ node, depth });
  for (const child of node.children) rows(child, depth + 1, out);
  return out;
}

export function Tree({ root, now }: { root: TreeNode; now: number }) {
  return (
    <DataTable class="tree" label="Objects of the cluster" columns={["Object", "Ready", "Reason", "Since", "Message"]}>
      {rows(root, 0, []).map(({ node, depth }) => (
            <tr key={`${depth}/${node.label}`} data-object={node.label}>
              <th scope="row" class={`depth-${Math.min(depth, 4)}`}>
                {node.label}
              </th>
              <td>{node.ready && <Phase value={node.ready} />}</td>
              <td>{node.reason}</td>
              <td>{node.since ? humanAge(node.since, now) : ""}</td>
              <td class="message">{node.message}</td>
            </tr>
      ))}
    </DataTable>
  );
}
