import { fileURLToPath } from "node:url";

// The edge package's own directory, for files shipped beside the code (the console app).
// Taken from a file directly under src/: the bundle (dist/main.mjs, `npm run build`)
// sits at the same depth, so this resolves the same whether run from source or built.
export const EDGE_ROOT = fileURLToPath(new URL("..", import.meta.url));
