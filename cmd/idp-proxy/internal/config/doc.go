// Package config is idp-proxy's configuration file: its YAML shape, its
// defaults, loading it with the environment and the command line's flags
// over it, and compiling it into the idp.Config and proxy rules the
// libraries take. Nothing here is needed to use pkg/idp or pkg/proxy from
// Go.
//
// The pipeline, run once at start, once per reload and once by
// check-config:
//
//	Load     the YAML parsed once into a node tree (checked for unknown keys
//	         and types with line numbers), decoded over Default, the
//	         environment and the flags layered over it: a File
//	Compile  the File checked, the secret files read once, the rules
//	         compiled once (proxy.Compile): a Compiled, from which serve
//	         builds the plugin (idp.New) and the proxy (proxy.NewCompiled)
//
// Defaults live with the packages that own them (idp.Config.WithDefaults,
// proxy.DefaultConfig); Default assembles them with the program's own.
//
// Zero. The file is decoded over Default, so a key that is absent takes
// its default and a key that is written is the value used. A zero written
// for a duration or size that cannot be zero (timeouts, jwks_cache_ttl,
// pool, header and body sizes, listen, log) selects the default, as the
// owning package reads its zero value. Two keys have a meaningful zero
// and say so in config.example.yaml: server.drain_delay: 0 is no delay
// and idp.leeway: 0 no leeway, which reaches pkg/idp as its switch
// idp.Config.NoLeeway (its zero Leeway is the default). The verified-token
// cache is turned off by its own switch, idp.verified_cache: false
// (idp.Config.DisableVerifiedCache); idp.verified_cache_size: 0, the
// former spelling, still does, and Compile lists it in
// Compiled.Deprecated, which serve logs and check-config prints. A
// negative value in the file is an error, as before.
//
// Errors that concern one setting are *KeyError values naming its key
// (errors.As finds them), so that a value taken from the environment is
// blamed on its variable without reading messages.
//
// Viper is used where it earns its place: layering defaults, the file, the
// environment and the flags by dotted key, and decoding the result
// strictly. It is not used to read the file (the YAML is parsed here once,
// for line numbers and for client IDs, whose case viper would fold), nor to
// bind the environment (its AutomaticEnv cannot reject an unknown
// IDP_PROXY_ variable or name it in an error).
package config
