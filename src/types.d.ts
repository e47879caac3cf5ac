// Files the bundler embeds: importing one gives its path inside the binary.
declare module "*.so" {
  const path: string;
  export default path;
}
declare module "*.c" {
  const path: string;
  export default path;
}
