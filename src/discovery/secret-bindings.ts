/**
 * What a user binds to a plugin's declared secrets, in config.json `plugins.<name>.secrets`
 * (issue 40): `{"file": path}` (mode 0600 or stricter), `{"command": [argv…]}` (run without a
 * shell, its stdout the value) or `{"env": NAME}` (cxagent's own environment, never passed on).
 * A project's config may only remove one (`false`); secrets/ resolves them.
 */
import * as v from "valibot";
import { SECRET_NAME } from "../protocol/manifest.ts";

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SHAPES = `{"file": "~/path"}, {"command": ["program", "arg", …]} or {"env": "NAME"}`;

export const SecretBindingSchema = v.union(
  [
    v.strictObject({ file: v.pipe(v.string(), v.check((p) => p.trim() !== "", "must not be blank")) }),
    v.strictObject({ command: v.pipe(v.array(v.string()), v.minLength(1, "must name the program to run"), v.check((a) => a.length === 0 || a[0]!.trim() !== "", "must name the program to run")) }),
    v.strictObject({ env: v.pipe(v.string(), v.regex(ENV_NAME, "must be an environment variable's name")) }),
  ],
  `must be one of ${SHAPES}`,
);
export type SecretBinding = v.InferOutput<typeof SecretBindingSchema>;

const secretName = v.pipe(v.string(), v.regex(SECRET_NAME, (i) => `${JSON.stringify(i.input)} is not a secret name (1-64 of a-z 0-9 _ . -, starting with a letter or digit)`));

/** A user's bindings: secret name → where its value comes from. */
export const SecretBindingsSchema = v.record(secretName, SecretBindingSchema);

/** What a project's config may say of a binding: remove it, never add one. */
export const ProjectSecretsSchema = v.record(
  v.string(),
  v.literal(false, "a project can remove a secret's binding (false), never add one: what a secret is bound to is your own config.json's to say"),
);
