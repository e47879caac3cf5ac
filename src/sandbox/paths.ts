/** Small file facts the launcher needs: open flags for O_PATH descriptors, and what a path is. */
import { statSync } from "node:fs";

export const O_PATH = 0o10000000;
export const O_CLOEXEC = 0o2000000;

/** "dir", "file" (anything else that exists, devices included), or null when it does not exist. */
export function statKind(path: string): "dir" | "file" | null {
  try {
    return statSync(path).isDirectory() ? "dir" : "file";
  } catch {
    return null;
  }
}
