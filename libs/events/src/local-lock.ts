import type { Db } from "@orvado/db";

// PGlite is one in-process database whose transactions are serialised: a
// transaction held open while a handler runs would block the handler's own
// queries on the same Db (a deadlock). So on PGlite, mutual exclusion between
// consumers of one group, or relays of one outbox, is an in-process lock on
// that Db instance; no other process can open the same PGlite database.
const held = new WeakMap<Db, Set<string>>();

/** Takes the named lock on db if free; returns its release, or null if someone holds it. */
export function tryLocalLock(db: Db, name: string): (() => void) | null {
  let names = held.get(db);
  if (!names) {
    names = new Set();
    held.set(db, names);
  }
  if (names.has(name)) return null;
  names.add(name);
  const set = names;
  return () => {
    set.delete(name);
  };
}
