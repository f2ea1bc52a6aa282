// The Response the guarded fetch gives the AI SDK's provider packages. The answer
// is already in memory, read whole under the byte limit (guarded-fetch.ts). A
// Response made from the bytes copies them into its body's stream. Here text(),
// json(), arrayBuffer(), bytes() and blob() read the bytes themselves, and body
// is a stream that hands over those same bytes as its one chunk, made only when
// asked for. The packages read answers either way: @ai-sdk/openai-compatible's
// provider-utils through body's reader, others with text(). Either way this costs
// less CPU than a Response, with one copy of the bytes fewer
// (docs/design-choices.md#upstream-calls-through-nodehttp).
const utf8 = new TextDecoder();

/** Response's own members that ReadResponse keeps; its body and the ways to read it are ReadResponse's. */
interface ResponseHead {
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly headers: Headers;
  readonly url: string;
  readonly redirected: boolean;
  readonly type: string;
}
// Typed as its head only: TypeScript's Response declares the body's members as properties, which a subclass cannot make getters and methods.
const ResponseWithoutBody = Response as unknown as new (body: null, init: ResponseInit) => ResponseHead;

export class ReadResponse extends ResponseWithoutBody {
  #bytes: Uint8Array | null;
  #used = false;
  #stream: ReadableStream<Uint8Array> | null | undefined;

  /** `bytes` null: an answer without a body (204, 304). */
  constructor(bytes: Uint8Array | null, init: ResponseInit) {
    super(null, init);
    this.#bytes = bytes;
  }

  get body(): ReadableStream<Uint8Array> | null {
    // Asking for the body does not read it (the binary handlers check it, then call arrayBuffer()).
    if (this.#stream === undefined) this.#stream = this.#bytes === null || this.#used ? null : oneChunk(this.#bytes);
    return this.#stream;
  }

  /** Read through one of the methods, or its stream taken by a reader. */
  get bodyUsed(): boolean {
    return this.#used || (this.#stream?.locked ?? false);
  }

  text(): Promise<string> {
    return this.#read((bytes) => utf8.decode(bytes));
  }

  json(): Promise<unknown> {
    return this.#read((bytes) => JSON.parse(utf8.decode(bytes)) as unknown);
  }

  arrayBuffer(): Promise<ArrayBuffer> {
    return this.#read((bytes) => bytes.slice().buffer as ArrayBuffer);
  }

  bytes(): Promise<Uint8Array<ArrayBuffer>> {
    return this.#read((bytes) => bytes.slice() as Uint8Array<ArrayBuffer>);
  }

  blob(): Promise<Blob> {
    return this.#read((bytes) => new Blob([bytes as Uint8Array<ArrayBuffer>], { type: this.headers.get("content-type") ?? "" }));
  }

  clone(): ReadResponse {
    if (this.bodyUsed) throw new TypeError("Response.clone: Body has already been consumed.");
    return new ReadResponse(this.#bytes, { status: this.status, statusText: this.statusText, headers: this.headers });
  }

  /** A body is read once, as Response's own: a second read is a TypeError. */
  #read<T>(convert: (bytes: Uint8Array) => T): Promise<T> {
    if (this.bodyUsed) return Promise.reject(new TypeError("Body is unusable: Body has already been read"));
    const bytes = this.#bytes ?? new Uint8Array();
    this.#taken();
    try {
      return Promise.resolve(convert(bytes));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The bytes are let go once read: the provider keeps the Response for the rest of its call. */
  #taken(): void {
    this.#used = true;
    this.#bytes = null;
  }
}

/** A stream of the bytes as they are, in one chunk: a reader gets this very array, not a copy. */
function oneChunk(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes);
      controller.close();
    },
  });
}
