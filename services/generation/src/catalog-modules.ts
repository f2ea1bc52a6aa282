import type { Catalog, UpstreamProvider } from "./catalog.ts";
import { loadSharp } from "./image-library.ts";
import { providerDefinition } from "./providers/registry.ts";

/**
 * Loads, at start, the modules the catalog's channels will need: each upstream provider's
 * package, and sharp when a channel is the sandbox (it draws every image with it). The
 * others stay unloaded (docs/architecture.md, "What a process does not use, it does not
 * load"). Loading them on a first job instead left the first jobs of a burst waiting for
 * the module loader on a busy event loop: in the soak the first upstream request went
 * out seconds later, and the answers then came back bunched
 * (docs/design-choices.md#bundles-run-with-plain-node). Sharp is still loaded on first use
 * by anything else that needs it (resizing an answer of another size, JPEG or WebP output, edits).
 */
export async function loadCatalogModules(catalog: Catalog, loaders: CatalogModuleLoaders = REAL_LOADERS): Promise<string[]> {
  const providers = new Set([...catalog.values()].flatMap((model) => model.channels.map((channel) => channel.provider)));
  await Promise.all([...providers].map((provider) => (provider === "sandbox" ? loaders.sharp() : loaders.provider(provider))));
  return [...providers].sort();
}

/** How each kind of module is loaded (tests count the calls). */
export interface CatalogModuleLoaders {
  sharp(): Promise<unknown>;
  provider(name: Exclude<UpstreamProvider, "sandbox">): Promise<unknown>;
}

const REAL_LOADERS: CatalogModuleLoaders = {
  sharp: loadSharp,
  provider: (name) => providerDefinition(name)!.loadFactory(),
};
