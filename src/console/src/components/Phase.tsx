// A phase or condition status as a coloured badge with its word (colour is never the only sign).
const TONES: Record<string, string> = {
  Running: "ok",
  Ready: "ok",
  True: "ok",
  Succeeded: "ok",
  Failed: "bad",
  False: "bad",
  Deleting: "warn",
  Updating: "busy",
  Provisioning: "busy",
  Validating: "busy",
  ScalingUp: "busy",
  ScalingDown: "busy",
  Provisioned: "busy",
  Pending: "idle",
  Unknown: "idle",
};

export function Phase({ value, title }: { value: string | undefined; title?: string }) {
  const word = value || "Pending";
  return (
    <span class={`badge ${TONES[word] ?? "idle"}`} title={title} data-phase={word}>
      {word}
    </span>
  );
}
