/** A bare Bun child: answers the first line it reads, then idles until stdin closes. */
const decoder = new TextDecoder();
for await (const chunk of Bun.stdin.stream()) {
  if (decoder.decode(chunk).includes("\n")) process.stdout.write('{"ready":true}\n');
}
