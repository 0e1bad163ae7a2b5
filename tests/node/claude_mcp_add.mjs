// Parses argv the way Claude Code's `claude mcp add` declares its options (commander, with the
// variadic `-e/--env <env...>` and `-H/--header <header...>`), and prints what it understood.
import { Command } from "commander";

const program = new Command();
program
  .command("add")
  .argument("<name>")
  .argument("<commandOrUrl>")
  .argument("[args...]")
  .option("-s, --scope <scope>")
  .option("-t, --transport <transport>")
  .option("-e, --env <env...>")
  .option("-H, --header <header...>")
  .action((name, commandOrUrl, args, options) => {
    process.stdout.write(JSON.stringify({ name, commandOrUrl, args, options }));
  });
program.exitOverride();
program.parse(process.argv.slice(2), { from: "user" });
