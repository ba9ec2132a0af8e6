/**
 * Secret fields of actor contexts, sealed in the stored form only: the
 * machines work on plaintext contexts, the `actors.state` column never holds
 * them. Each kind declares its groups (ActorKindSpec `secrets`); this code
 * knows no kind.
 *
 * A group is some fields of one object of the context (`at`, a path of
 * property names), sealed together into one field of that object
 * (`sealedAs`): one field seals its value (a string as is; a `list[].field`
 * the values of that field in every element, as a JSON array), several seal a
 * JSON object by field name. The fields leave the stored object, or stay as
 * null (`leave: "null"`, so a list's elements keep their shape). A group is
 * sealed when one of its fields holds a string, opened when `sealedAs` holds
 * one: a context stored before sealing existed opens as it is.
 */
export interface SecretGroup {
  /** The object holding the fields: property names from the context (`[]`: the context itself). Absent or null: nothing to seal. */
  at: readonly string[];
  /** Its fields; `list[].field`: that field of every element of the array `list` (then the group's only field). */
  fields: readonly string[];
  /** The stored object's field holding the group sealed. */
  sealedAs: string;
  /** What stays in the fields' places: nothing (default) or null. */
  leave?: "absent" | "null";
}

/** Seals text with associated data (src/secrets/secret-cipher.ts). */
export interface TextCipher {
  seal(plain: string, aad: string): string;
  open(sealed: string, aad: string): string;
}

export interface ContextSealer {
  /** The stored form of a context. */
  seal(context: unknown, id: string): unknown;
  /** A stored context opened (plaintext fields back in place). */
  open(stored: unknown, id: string): unknown;
  /** True when the stored context still holds a declared field in plaintext (written before sealing existed). */
  hasPlaintext(stored: unknown): boolean;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** The `list[].field` split of a field name, or null for a plain field. */
function listField(field: string): { list: string; leaf: string } | null {
  const i = field.indexOf("[].");
  return i < 0 ? null : { list: field.slice(0, i), leaf: field.slice(i + 3) };
}

/** `fn` applied to the object at `path` of `root`, the objects above it copied; `root` itself when the path leads nowhere. */
function updateAt(root: unknown, path: readonly string[], fn: (o: Obj) => Obj): unknown {
  if (!isObj(root)) return root;
  if (path.length === 0) return fn(root);
  const [head, ...rest] = path as [string, ...string[]];
  if (!isObj(root[head])) return root;
  return { ...root, [head]: updateAt(root[head], rest, fn) };
}

function objectAt(root: unknown, path: readonly string[]): Obj | null {
  let o = root;
  for (const p of path) o = isObj(o) ? o[p] : undefined;
  return isObj(o) ? o : null;
}

function holdsPlaintext(o: Obj, g: SecretGroup): boolean {
  return g.fields.some((f) => {
    const l = listField(f);
    if (!l) return typeof o[f] === "string";
    const list = o[l.list];
    return Array.isArray(list) && list.some((e) => isObj(e) && typeof e[l.leaf] === "string");
  });
}

function sealGroup(o: Obj, g: SecretGroup, seal: (text: string) => string): Obj {
  if (!holdsPlaintext(o, g)) return o;
  const list = g.fields.length === 1 ? listField(g.fields[0]!) : null;
  if (list) {
    const elements = (o[list.list] as unknown[]).map((e) => (isObj(e) ? e : {}));
    const values = elements.map((e) => (typeof e[list.leaf] === "string" ? e[list.leaf] : null));
    return { ...o, [list.list]: elements.map((e) => ({ ...e, [list.leaf]: null })), [g.sealedAs]: seal(JSON.stringify(values)) };
  }
  const plain = g.fields.length === 1 ? String(o[g.fields[0]!]) : JSON.stringify(Object.fromEntries(g.fields.map((f) => [f, o[f]])));
  const rest: Obj = { ...o };
  for (const f of g.fields) {
    if (g.leave === "null") rest[f] = null;
    else delete rest[f];
  }
  return { ...rest, [g.sealedAs]: seal(plain) };
}

function openGroup(o: Obj, g: SecretGroup, open: (sealed: string) => string): Obj {
  const sealed = o[g.sealedAs];
  if (typeof sealed !== "string") return o;
  const { [g.sealedAs]: _sealed, ...rest } = o;
  const plain = open(sealed);
  const list = g.fields.length === 1 ? listField(g.fields[0]!) : null;
  if (list) {
    const values = JSON.parse(plain) as Array<string | null>;
    const elements = Array.isArray(rest[list.list]) ? (rest[list.list] as Obj[]) : [];
    return { ...rest, [list.list]: elements.map((e, i) => ({ ...e, [list.leaf]: values[i] ?? null })) };
  }
  if (g.fields.length === 1) return { ...rest, [g.fields[0]!]: plain };
  const values = JSON.parse(plain) as Obj;
  return { ...rest, ...Object.fromEntries(g.fields.map((f) => [f, values[f]])) };
}

/** The sealer of one kind's declared groups (none: contexts stored as they are). */
export function createContextSealer(cipher: TextCipher, groups: readonly SecretGroup[]): ContextSealer {
  const openOrThrow = (sealed: string, id: string): string => {
    try {
      return cipher.open(sealed, id);
    } catch {
      throw new Error(`Cannot open the sealed secrets of ${id}: was SECRET_KEY (or DATA_DIR/secret.key) changed?`);
    }
  };
  return {
    seal(context, id) {
      let out = context;
      for (const g of groups) out = updateAt(out, g.at, (o) => sealGroup(o, g, (text) => cipher.seal(text, id)));
      return out;
    },
    open(stored, id) {
      let out = stored;
      for (const g of groups) out = updateAt(out, g.at, (o) => openGroup(o, g, (sealed) => openOrThrow(sealed, id)));
      return out;
    },
    hasPlaintext(stored) {
      return groups.some((g) => {
        const o = objectAt(stored, g.at);
        return o !== null && holdsPlaintext(o, g);
      });
    },
  };
}

/** The field names a group's plaintext would appear under in stored JSON (`"name":"`): the start-up search for older rows. */
export function secretLeaves(groups: readonly SecretGroup[]): string[] {
  return [...new Set(groups.flatMap((g) => g.fields.map((f) => listField(f)?.leaf ?? f)))];
}
