// Bounds that several services must agree on.

/**
 * The most images one request may ask for under any configuration. Generation's
 * GENERATION_MAX_IMAGES may only lower it; the edge refuses anything above it
 * before the request goes on the wire (n is a uint32 there).
 */
export const IMAGE_COUNT_CEILING = 10;
