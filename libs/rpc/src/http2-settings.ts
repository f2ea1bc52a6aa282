// Settings both ends of the HTTP/2 connections between services share (client.ts, server.ts).

/**
 * The memory (MB) Node lets one HTTP/2 session between services hold in frames and
 * stream state before it refuses new streams and ends the session, and with it
 * every call still open on it. Node's default, 10, is reached by somewhere between
 * 10,000 and 18,000 jobs held open at once on one edge-to-generation session (the
 * soak at 18,000 lost 16,473 calls at once, docs/performance.md). A ceiling, not
 * an allocation: a session uses what its open calls need. Both ends set it.
 */
export const HTTP2_SESSION_MEMORY_MB = 256;
