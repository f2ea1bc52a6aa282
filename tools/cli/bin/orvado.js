#!/usr/bin/env node
// Plain JS so `npx orvado` runs straight from the workspace: tsx loads the
// TypeScript sources, no build step needed.
import { register } from "tsx/esm/api";

register();
await import("../src/main.ts");
