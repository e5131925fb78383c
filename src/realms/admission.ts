// Admission of RealmUsers: a password given in spec.password is replaced by its argon2id hash before
// anything is stored (also in kubectl's last-applied-configuration annotation), so it never reaches the
// store, the watch stream or a listing; an update without a password keeps the hash it had.
import { hash, verify } from "@node-rs/argon2";
import { invalid, notFound } from "../api/field-errors.ts";
import { MIN_PASSWORD_LENGTH, realmKind, realmUserKind, type RealmUserObject } from "../api/slipway/realm.ts";
import type { AdmissionPlugin } from "../apiserver/admission.ts";
import { InvalidError, refOf } from "../apiserver/errors.ts";

const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";
/** What a refused password is shown as: never itself. */
const HIDDEN = "<hidden>";

/** The last-applied annotation without a password in it (kubectl keeps the whole manifest there). */
function withoutPassword(annotation: string): string {
  try {
    const applied = JSON.parse(annotation) as { spec?: Record<string, unknown> };
    if (applied.spec) {
      delete applied.spec.password;
      delete applied.spec.passwordHash;
    }
    return JSON.stringify(applied);
  } catch {
    return "";
  }
}

export const realmUserAdmission: AdmissionPlugin = {
  name: "RealmUser",
  async mutate(request) {
    if (request.def.kind !== realmUserKind.kind || request.def.group !== realmUserKind.group) return;
    const user = request.object as RealmUserObject;
    const old = request.oldObject as RealmUserObject | undefined;
    const annotations = user.metadata.annotations;
    if (annotations?.[LAST_APPLIED] !== undefined) annotations[LAST_APPLIED] = withoutPassword(annotations[LAST_APPLIED]);
    const password = user.spec.password;
    delete user.spec.password;
    if (password === undefined) {
      // Only Slipway writes the hash: an update keeps the one stored.
      if (old?.spec.passwordHash !== undefined) user.spec.passwordHash = old.spec.passwordHash;
      else delete user.spec.passwordHash;
      return;
    }
    if (password.length < MIN_PASSWORD_LENGTH || password.length > 1024) {
      throw new InvalidError(refOf(request.def, user.metadata.name), [invalid("spec.password", HIDDEN, `must be ${MIN_PASSWORD_LENGTH} to 1024 characters long`)]);
    }
    // Applying the same manifest again keeps the hash (and the object) as it was.
    const kept = old?.spec.passwordHash;
    user.spec.passwordHash = kept && (await verify(kept, password).catch(() => false)) ? kept : await hash(password);
  },
  async validate(request) {
    if (request.operation !== "CREATE" || request.def.kind !== realmUserKind.kind || request.def.group !== realmUserKind.group) return;
    const user = request.object as RealmUserObject;
    const realms = request.objects.registry.byKind(`${realmKind.group}/${realmKind.version}`, realmKind.kind)!;
    if (!(await request.objects.tryGet(realms, undefined, user.spec.realm))) {
      throw new InvalidError(refOf(request.def, user.metadata.name), [notFound("spec.realm", user.spec.realm, "no Realm of that name")]);
    }
  },
};
