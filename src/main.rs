fn main() -> std::process::ExitCode {
    icetrim::internals::shell::main()
}
