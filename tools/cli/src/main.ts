import { runCli } from "./index.ts";

// Exit through exitCode rather than process.exit so stdout is flushed when piped.
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
});
