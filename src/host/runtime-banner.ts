/**
 * Keeps Bun's crash report out of a plugin's stderr tail. A plugin that faults takes the plugin
 * host down inside Bun's own signal handler, which prints a banner blaming Bun and asking for a bug
 * report; the crash is the plugin's, so the tail keeps only what the plugin wrote, and the fault
 * itself ("Segmentation fault at address 0x8") is kept apart for the message. The banner runs from
 * a rule of '=' followed by "Bun v…" to its bun.report link and the blank line after it.
 */
export class RuntimeBannerFilter {
  /** The fault the runtime reported ("Segmentation fault at address 0x8"), once it has. */
  fault: string | null = null;
  private held: string | null = null;
  private inBanner = false;
  private afterLink = false;

  /** The lines of the plugin's own to keep, for one line read from the plugin host's stderr. */
  accept(line: string): string[] {
    if (this.afterLink) {
      this.afterLink = false;
      if (line.trim() === "") return [];
    }
    if (this.inBanner) {
      const panic = /^panic(?:\([^)]*\))?: (.+)$/.exec(line);
      if (panic) this.fault ??= panic[1]!.trim();
      if (/https:\/\/bun\.report\//.test(line)) {
        this.inBanner = false;
        this.afterLink = true;
      }
      return [];
    }
    if (this.held !== null) {
      const held = this.held;
      this.held = null;
      if (/^Bun v\d/.test(line)) {
        this.inBanner = true;
        return [];
      }
      return [held, ...this.accept(line)];
    }
    if (/^={40,}$/.test(line)) {
      this.held = line;
      return [];
    }
    return [line];
  }

  /** A rule line held back to see whether a banner follows, when the stream has ended. */
  flush(): string[] {
    const held = this.held;
    this.held = null;
    return held === null ? [] : [held];
  }
}
