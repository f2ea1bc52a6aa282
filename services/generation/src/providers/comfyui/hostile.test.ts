import { afterEach, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import sharp from "sharp";
import { LIGHTHOUSE_REQUEST, localComfyChannel } from "./test-channel.ts";
import { generateOnChannel, type UpstreamSettings } from "../upstream.ts";
import type { ImageRef } from "./api.ts";

// The comfyui adapter over real HTTP against a hostile ComfyUI (a local node:http server
// that refuses the websocket, so the job is followed by polling its history): the images
// a history names are fetched only if they are the job's own outputs, never input files
// (other jobs' uploaded edit images) nor paths that climb out of the output folders.

const settings: UpstreamSettings = { jobTimeoutMs: 600_000, allowPrivateUpstreams: false, maxUpstreamBytes: 50 * 1024 * 1024 };
const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

/** A ComfyUI whose history says the output node made `refs`; it records every GET /view query. */
async function hostileComfy(refs: ImageRef[], views: URLSearchParams[]): Promise<string> {
  const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: { r: 1, g: 2, b: 3 } } }).png().toBuffer();
  let promptId = "";
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://comfy");
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const json = (body: unknown) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (req.method === "POST" && url.pathname === "/prompt") {
        promptId = JSON.parse(Buffer.concat(chunks).toString("utf8")).prompt_id;
        return json({ prompt_id: promptId, number: 1, node_errors: {} });
      }
      if (url.pathname.startsWith("/history/")) {
        return json({ [promptId]: { outputs: { "9": { images: refs } }, status: { status_str: "success", completed: true, messages: [] } } });
      }
      if (url.pathname === "/view") {
        views.push(url.searchParams);
        return res.writeHead(200, { "content-type": "image/png" }).end(png);
      }
      if (req.method === "POST") return json({});
      res.writeHead(404).end();
    });
  });
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}


describe("the comfyui adapter against a hostile ComfyUI (HTTP, a local node:http server)", () => {
  it.each<[string, ImageRef]>([
    ["an input file (another job's upload)", { filename: "orvado-0a8f-image.png", subfolder: "", type: "input" }],
    ["a file name that climbs out", { filename: "../../etc/passwd", subfolder: "", type: "output" }],
    ["a file name with a folder", { filename: "sub/../../x.png", subfolder: "", type: "output" }],
    ["a subfolder that climbs out", { filename: "x.png", subfolder: "../../etc", type: "output" }],
    ["an absolute subfolder", { filename: "x.png", subfolder: "/etc", type: "output" }],
  ])("does not fetch %s named by the history, and fails the job", async (_name, ref) => {
    const views: URLSearchParams[] = [];
    const outcome = await generateOnChannel(localComfyChannel(await hostileComfy([ref], views)), undefined, LIGHTHOUSE_REQUEST, AbortSignal.timeout(30_000), settings);
    expect(outcome.ok).toBe(false);
    expect(views).toEqual([]);
  });

  it("fetches the job's own outputs and previews (output and temp, in a subfolder too)", async () => {
    const views: URLSearchParams[] = [];
    const refs: ImageRef[] = [
      { filename: "ComfyUI_00001_.png", subfolder: "", type: "output" },
      { filename: "ComfyUI_temp_00001_.png", subfolder: "orvado/2026", type: "temp" },
    ];
    const outcome = await generateOnChannel(localComfyChannel(await hostileComfy(refs, views)), undefined, { ...LIGHTHOUSE_REQUEST, n: 2 }, AbortSignal.timeout(30_000), settings);
    expect(outcome.ok).toBe(true);
    expect(views.map((query) => query.get("type"))).toEqual(["output", "temp"]);
  });
});
