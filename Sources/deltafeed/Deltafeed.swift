import ArgumentParser

/// The `deltafeed` command: `serve` runs the HTTP service; `seed` fills a store with demo data;
/// `token` prints a viewer token; `simulate` writes through the API so a feed visibly moves;
/// `prove` checks over HTTP, against one server or several replicas, that every delta form applied
/// by the reference client equals a fresh fetch.
@main
struct Deltafeed: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deltafeed",
        abstract: "A feed server that answers with deltas a mobile client applies without diffing.",
        discussion: """
            Every option also reads an environment variable (named beside it); a flag on the \
            command line wins over the variable, which wins over the default.
            """,
        subcommands: [Serve.self, Seed.self, Token.self, Simulate.self, Prove.self],
        defaultSubcommand: Serve.self
    )
}

/// Why a command stopped early: `simulate`'s or `prove`'s server refused the token, a viewer's feed
/// cannot be fetched, the server cannot be reached. Printed as `Error: <message>` without the usage text.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
