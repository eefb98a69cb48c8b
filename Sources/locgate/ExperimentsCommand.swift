import ArgumentParser
import Foundation
import LocgateCommandSupport
import LocationAuthorization
import LocationGateHTTP
import LocationGateService

/// `locgate experiments list|put|stop|delete|results --app ID` (SPEC §16): the experiments API
/// from the command line, through the same service face (`ExperimentsFace`) and the same checks;
/// every change is recorded in the admin audit trail with actor `{"cli": true}`. An unknown app
/// fails, non-zero, with "no such app", before anything is read or written.
struct ExperimentsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "experiments", abstract: "Manage prompt experiments and read their results (SPEC §16).",
        subcommands: [List.self, Put.self, Stop.self, Delete.self, Results.self])

    /// `locgate experiments list --app ID`: `{"experiments": [...]}` as `GET /v1/experiments`, by key.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print an app's experiments as JSON, sorted by key.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The app id") var app: String

        func validate() throws {
            try ExperimentsCommand.validate(app: app)
        }

        func run() async throws {
            guard let appID = UUID(uuidString: app) else { return }
            let experiments = try await withService(database) { service in
                try await requireApp(appID, in: service, "it has no experiments to list")
                return try await service.experiments.experiments(appID: appID)
            }
            struct Listing: Encodable { var experiments: [Experiment] }
            try printJSON(Listing(experiments: experiments))
        }
    }

    /// `locgate experiments put KEY --app ID --body JSON` (or `--file PATH`, `-` for standard
    /// input): the body of `PUT /v1/experiments/{key}`, checked as the API checks it.
    struct Put: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an experiment, or change a running one, from its JSON definition.",
            discussion: """
                The definition is the body of PUT /v1/experiments/{key}: {"description", "prompt", \
                "variants": [{"key", "weight"}], "control", "eligible", "guard"}. While an experiment \
                runs, only its description, weights, eligible and guard may change; a stopped one \
                cannot change. Prints "created" or "replaced" on standard error and the experiment \
                on standard output.
                """)
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The experiment's key") var key: String
        @Option(help: "The app id") var app: String
        @Option(help: "The definition as JSON") var body: String?
        @Option(help: "A file holding the definition as JSON; - for standard input") var file: String?

        func validate() throws {
            try ExperimentsCommand.validate(app: app)
            guard (body == nil) != (file == nil) else { throw ValidationError("give the definition with --body JSON or --file PATH, one of them") }
        }

        func run() async throws {
            guard let appID = UUID(uuidString: app) else { return }
            let definition = try readDefinition()
            let key = self.key
            let (experiment, created) = try await withService(database) { service in
                try await requireApp(appID, in: service, "no experiment was put")
                try ExperimentFormat.checkMembers(of: definition)
                return try await service.experiments.putExperiment(appID: appID, key: key, body: Array(definition), actor: .cli)
            }
            FileHandle.standardError.write(Data((created ? "created\n" : "replaced\n").utf8))
            try printJSON(experiment)
        }

        /// The definition's bytes, at most 64 KiB as the API takes them.
        private func readDefinition() throws -> Data {
            let limit = 64 * 1024
            let data: Data
            if let body {
                data = Data(body.utf8)
            } else if file == "-" {
                data = FileHandle.standardInput.readDataToEndOfFile()
            } else if let file {
                guard let contents = FileManager.default.contents(atPath: file) else {
                    throw ValidationError("--file: cannot read \(file)")
                }
                data = contents
            } else {
                throw ValidationError("give the definition with --body JSON or --file PATH")
            }
            guard data.count <= limit else { throw ValidationError("the definition is larger than \(limit) bytes") }
            return data
        }
    }

    /// `locgate experiments stop KEY --app ID [--winner V]`: every device gets the winner (the
    /// control without one) from now; the experiment can no longer change.
    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop a running experiment: every device gets the winner (default: the control) from now on.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The experiment's key") var key: String
        @Option(help: "The app id") var app: String
        @Option(help: "The variant every device gets from now on (default: the control)") var winner: String?

        func validate() throws {
            try ExperimentsCommand.validate(app: app)
        }

        func run() async throws {
            guard let appID = UUID(uuidString: app) else { return }
            let key = self.key, winner = self.winner
            let experiment = try await withService(database) { service in
                try await requireApp(appID, in: service, "nothing was stopped")
                return try await service.experiments.stopExperiment(appID: appID, key: key, winner: winner, actor: .cli)
            }
            try printJSON(experiment)
        }
    }

    /// `locgate experiments delete KEY --app ID`: the experiment, its exposures and results gone.
    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete an experiment with its exposures and results.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The experiment's key") var key: String
        @Option(help: "The app id") var app: String

        func validate() throws {
            try ExperimentsCommand.validate(app: app)
        }

        func run() async throws {
            guard let appID = UUID(uuidString: app) else { return }
            let key = self.key
            try await withService(database) { service in
                try await requireApp(appID, in: service, "nothing was deleted")
                try await service.experiments.deleteExperiment(appID: appID, key: key, actor: .cli)
            }
            FileHandle.standardError.write(Data("deleted\n".utf8))
        }
    }

    /// `locgate experiments results KEY --app ID [--format csv]`: what `GET
    /// /v1/experiments/{key}/results` answers, as JSON or as its CSV.
    struct Results: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print an experiment's results per variant, the control first: counts, grant rates, 95% intervals, uplift and p.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The experiment's key") var key: String
        @Option(help: "The app id") var app: String
        @Option(help: "json or csv") var format = "json"

        func validate() throws {
            try ExperimentsCommand.validate(app: app)
            guard format == "json" || format == "csv" else { throw ValidationError("--format must be json or csv") }
        }

        func run() async throws {
            guard let appID = UUID(uuidString: app) else { return }
            let key = self.key
            let results = try await withService(database) { service in
                try await requireApp(appID, in: service, "it has no results")
                return try await service.experiments.experimentResults(appID: appID, key: key)
            }
            if format == "csv" {
                FileHandle.standardOutput.write(Data(ExperimentFormat.csv(results).utf8))
            } else {
                try printJSON(ExperimentFormat.Results(results))
            }
        }
    }

    static func validate(app: String) throws {
        guard UUID(uuidString: app) != nil else { throw ValidationError("--app must be an app id (a UUID)") }
    }
}
