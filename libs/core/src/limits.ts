// Bounds that several services must agree on.

/**
 * The most images one request may ask for under any configuration. Generation's
 * GENERATION_MAX_IMAGES may only lower it; the edge refuses anything above it
 * before the request goes on the wire (n is a uint32 there).
 */
export const IMAGE_COUNT_CEILING = 10;

/**
 * Image edits (POST /v1/images/edits): the most input images one edit may upload
 * under any configuration (OpenAI's own limit). EDGE_EDIT_MAX_IMAGES may only lower it.
 */
export const EDIT_IMAGE_COUNT_CEILING = 16;

/**
 * The most bytes the files of one edit (images and mask) may total under any
 * configuration; EDGE_EDIT_MAX_TOTAL_BYTES may only lower it. They travel to
 * generation inside one CreateImage message, so this also bounds that message.
 */
export const EDIT_UPLOAD_BYTES_CEILING = 64 * 1024 * 1024;

/** The largest message generation's RPC server reads: an edit's files plus room for its text fields. */
export const GENERATION_RPC_READ_MAX_BYTES = EDIT_UPLOAD_BYTES_CEILING + 1024 * 1024;
