import { bufferView } from "@orvado/core";
import type { FastifyInstance } from "fastify";
import { Readable } from "node:stream";
import { ErrorCode, type GenerationService } from "@orvado/proto";
import { Code, ConnectError, type Client } from "@orvado/rpc";
import { sendError } from "../reply.ts";
import { parsePlainInteger } from "../plain-integer.ts";

/** The extension names the format asked for (output_format); the stored content type is what is served. */
const FILE = /^(img_[A-Za-z0-9_-]{10,64})\.(?:png|jpeg|webp)$/;

/** GET /v1/files/<image>.<png|jpeg|webp>?expires=…&sig=…: signed, expiring image links. */
export function fileRoutes(app: FastifyInstance, deps: { generation: Client<typeof GenerationService> }) {
  app.get<{ Params: { file: string }; Querystring: { expires?: string; sig?: string } }>("/v1/files/:file", async (request, reply) => {
    const match = FILE.exec(request.params.file);
    // Only the form the link was signed with: "+1", "01" or "1e9" is not another spelling of it.
    const expires = parsePlainInteger(request.query.expires);
    if (!match || expires === null || typeof request.query.sig !== "string" || request.query.sig === "") {
      return sendError(request, reply, ErrorCode.NOT_FOUND, "No such image");
    }
    const parts = deps.generation.readImage({ imageId: match[1]!, expiresUnix: BigInt(expires), signature: request.query.sig })[Symbol.asyncIterator]();
    try {
      const first = await parts.next();
      const contentType = first.done ? "application/octet-stream" : first.value.contentType;
      async function* chunks() {
        for (let part = await parts.next(); !part.done; part = await parts.next()) yield bufferView(part.value.chunk);
      }
      const body = Readable.from(chunks());
      // A client that left, mid-download or before its first bytes: the ReadImage stream is ended too, so its file is closed.
      body.once("close", () => void parts.return?.().catch(() => undefined));
      return reply.type(contentType).header("cache-control", "private, max-age=3600").send(body);
    } catch (error) {
      if (error instanceof ConnectError && error.code === Code.FailedPrecondition) {
        return sendError(request, reply, ErrorCode.LINK_EXPIRED, "This image link has expired; images are kept for a limited time");
      }
      if (error instanceof ConnectError && error.code === Code.NotFound) return sendError(request, reply, ErrorCode.NOT_FOUND, "No such image");
      throw error;
    }
  });
}
