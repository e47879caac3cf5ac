// Files the bundler embeds: importing one gives its path inside the binary.
declare module "*.so" {
  const path: string;
  export default path;
}
declare module "*.bin" {
  const path: string;
  export default path;
}
declare module "*.c" {
  const path: string;
  export default path;
}
// Files imported with { type: "text" }: their content, embedded in the binary.
declare module "*.tmpl" {
  const text: string;
  export default text;
}
declare module "*.h" {
  const text: string;
  export default text;
}
