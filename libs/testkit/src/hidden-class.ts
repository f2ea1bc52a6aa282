import { setFlagsFromString } from "node:v8";

// For tests only (imported as @orvado/testkit/hidden-class, never by a service): whether
// objects built the same way share V8's hidden class. In Node 20's V8 an object
// literal that begins with a spread and then adds properties the spread object does
// not have (`{ ...ids, model }`) gets hidden classes of its own once its code is warm,
// one per property added, and the code reading such objects is deoptimized and
// compiled again (docs/performance.md#measured-design-choices). Replacing properties
// the spread object has (`{ ...request, header }`) keeps its class. Node 24's V8, which
// Orvado now runs on, gives both one class (hidden-class.test.ts).
setFlagsFromString("--allow-natives-syntax");
const haveSameMap = new Function("a", "b", "return %HaveSameMap(a, b)") as (a: object, b: object) => boolean;

/** Calls `make` until its code is warm, then says whether two more of its objects share a hidden class. */
export function sharesHiddenClass(make: (index: number) => object): boolean {
  for (let index = 0; index < 2_000; index += 1) make(index);
  return haveSameMap(make(-1), make(-2));
}
