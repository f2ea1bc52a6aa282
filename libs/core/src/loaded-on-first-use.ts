/**
 * `load` called on first use and its promise shared by every caller after; a failed load is
 * tried again by the next caller. For modules a process loads only when it needs them
 * (docs/architecture.md, "What a process does not use, it does not load").
 */
export function loadedOnFirstUse<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    });
    return loading;
  };
}
