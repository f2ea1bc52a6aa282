import type { Catalog, CatalogModel } from "./catalog.ts";

// Model aliases (docs/providers.md#model-aliases): a model may answer to other names, such as
// the "gpt-image-1" an app written for OpenAI sends. A request naming an alias runs the model
// itself; the job, the reservation, the cost record and the billing events carry the model's
// own id, so usage and prices know one name per model.

/** Each name of the models file (an id or an alias) given to a second model or twice: one message per clash. */
export function nameClashes(models: ReadonlyArray<{ id: string; aliases?: string[] }>): string[] {
  const owners = new Map<string, string>();
  const clashes: string[] = [];
  const claim = (name: string, what: string) => {
    const earlier = owners.get(name);
    if (earlier === undefined) owners.set(name, what);
    else clashes.push(`${what} clashes with ${earlier}: a name may run only one model`);
  };
  for (const model of models) claim(model.id, `model id "${model.id}"`);
  for (const model of models) {
    for (const alias of model.aliases ?? []) claim(alias, `alias "${alias}" of model "${model.id}"`);
  }
  return clashes;
}

/** The model a request's name runs: the model of that id, or the one listing it as an alias. */
export function findModel(catalog: Catalog, name: string): CatalogModel | undefined {
  const byId = catalog.get(name);
  if (byId) return byId;
  for (const model of catalog.values()) if (model.aliases.includes(name)) return model;
  return undefined;
}

/** Whether a key's model allowlist (ids or aliases, as the operator wrote them) admits the model. */
export function allowlistAdmits(catalog: Catalog, allowed: readonly string[], model: CatalogModel): boolean {
  return allowed.length === 0 || allowed.some((name) => findModel(catalog, name)?.id === model.id);
}
