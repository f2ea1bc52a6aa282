import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The logger batches its lines (log.ts). These run a real child process and read
// its standard output through a pipe, as a supervisor or container runtime does.

const LOG_MODULE = fileURLToPath(new URL("./log.ts", import.meta.url));

interface Child {
  /** How many reads of the pipe brought data (each write the child makes is at least one). */
  chunks: () => number;
  lines: () => { msg: string; [key: string]: unknown }[];
  text: () => string;
  exited: Promise<number | null>;
  firstLine: Promise<void>;
  kill: () => void;
}

function runLogging(body: string): Child {
  const script = `import { createLogger, flushLogs } from ${JSON.stringify(LOG_MODULE)};\nconst logger = createLogger("log-test");\n${body}`;
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
  let text = "";
  let chunks = 0;
  let sawLine: () => void = () => {};
  const firstLine = new Promise<void>((resolve) => (sawLine = resolve));
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    text += chunk;
    chunks += 1;
    if (text.includes("\n")) sawLine();
  });
  // 'close', not 'exit': the pipe may still hold lines when the process has ended.
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  return {
    chunks: () => chunks,
    lines: () => text.split("\n").filter(Boolean).map((line) => JSON.parse(line)),
    text: () => text,
    exited,
    firstLine,
    kill: () => child.kill("SIGKILL"),
  };
}

describe("createLogger (a child process's standard output, through a pipe)", () => {
  it("writes every line logged before a normal exit, in order", async () => {
    const child = runLogging(`for (let i = 0; i < 200; i++) logger.info({ i }, "line"); process.exit(0);`);
    expect(await child.exited).toBe(0);
    expect(child.lines().map((line) => line.i)).toEqual([...Array(200).keys()]);
  });

  it("writes lines logged a few milliseconds apart together, not one write each", async () => {
    const child = runLogging(`let i = 0; const timer = setInterval(() => { logger.info({ i }, "spaced"); if (++i === 20) { clearInterval(timer); setTimeout(() => process.exit(0), 50); } }, 5);`);
    expect(await child.exited).toBe(0);
    expect(child.lines()).toHaveLength(20);
    // 20 lines over about 100 ms: one write per line would be 20 reads at least; batches are a few.
    expect(child.chunks()).toBeLessThan(10);
  });

  it("writes a line while the process goes on running, without waiting for more lines or the exit", async () => {
    const child = runLogging(`logger.info("alone"); setTimeout(() => {}, 60_000);`);
    try {
      const seen = await Promise.race([child.firstLine.then(() => "seen"), child.exited.then(() => "exited")]);
      expect(seen).toBe("seen");
      expect(child.lines().map((line) => line.msg)).toEqual(["alone"]);
    } finally {
      child.kill();
    }
  });

  it("writes the lines logged before an uncaught exception ends the process", async () => {
    const child = runLogging(`logger.error({ step: 1 }, "about to fail"); setImmediate(() => { throw new Error("boom"); });`);
    expect(await child.exited).not.toBe(0);
    expect(child.lines().map((line) => line.msg)).toEqual(["about to fail"]);
  });

  it("writes the lines batched so far before what the process writes itself after flushLogs", async () => {
    const child = runLogging(`logger.warn("the note"); flushLogs(); process.stdout.write("BANNER: see the log above\\n"); setTimeout(() => process.exit(0), 300);`);
    await child.exited;
    const text = child.text();
    expect(text.indexOf('"msg":"the note"')).toBeGreaterThanOrEqual(0);
    expect(text.indexOf('"msg":"the note"')).toBeLessThan(text.indexOf("BANNER"));
  });

  it("still redacts secrets", async () => {
    const child = runLogging(`logger.info({ headers: { authorization: "Bearer td-secret" }, password: "p" }, "request"); process.exit(0);`);
    await child.exited;
    const [line] = child.lines();
    expect(line).toMatchObject({ msg: "request", password: "[redacted]", headers: { authorization: "[redacted]" } });
  });
});
