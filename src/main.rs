fn main() -> std::process::ExitCode {
    icetrim::shell::main()
}
