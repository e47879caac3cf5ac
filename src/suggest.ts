/**
 * "Did you mean …?": the known name closest to what was typed, when one is close enough to be a
 * typo (an edit distance of about a third of its length, or a case slip), else null.
 */

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of two neighbours. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array(rows * cols).fill(0);
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[(i - 1) * cols + j]! + 1, d[i * cols + j - 1]! + 1, d[(i - 1) * cols + j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[(i - 2) * cols + j - 2]! + 1);
      d[i * cols + j] = best;
    }
  }
  return d[rows * cols - 1]!;
}

export function closest(typed: string, known: Iterable<string>): string | null {
  const lower = typed.toLowerCase();
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const name of known) {
    if (name === typed) return null;
    const distance = name.toLowerCase() === lower ? 0.5 : editDistance(lower, name.toLowerCase());
    if (distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  if (best === null) return null;
  const allowed = Math.max(1, Math.floor(Math.max(typed.length, best.length) / 3));
  return bestDistance <= allowed ? best : null;
}

/** "; did you mean 'x'?" or "" — to append to a message about an unknown name. */
export function didYouMean(typed: string, known: Iterable<string>): string {
  const match = closest(typed, known);
  return match === null ? "" : `; did you mean '${match}'?`;
}
