// Command pulumi-resource-kubernetes serves Pulumi's Kubernetes provider, built from its Go module.
//
// The provider's own main embeds a copy of its schema that its build generates and does not
// publish; build.sh copies the schema and the Terraform mapping from the module next to this file,
// and the version the stack's SDK asks for is stamped into the schema here, as that generator does.
package main

import (
	_ "embed"
	"encoding/json"
	"log"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
)

// version is the plugin version the engine installs this binary under (set by build.sh).
var version = "0.0.0"

//go:embed schema.json
var schema []byte

//go:embed terraform-mapping.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version, versioned(schema, version), compact(terraformMapping))
}

// versioned is the schema with its top-level "version" set.
func versioned(raw []byte, version string) []byte {
	var spec map[string]json.RawMessage
	if err := json.Unmarshal(raw, &spec); err != nil {
		log.Fatalf("schema.json: %v", err)
	}
	quoted, _ := json.Marshal(version)
	spec["version"] = quoted
	out, err := json.Marshal(spec)
	if err != nil {
		log.Fatalf("schema.json: %v", err)
	}
	return out
}

// compact is the JSON document without insignificant white space.
func compact(raw []byte) []byte {
	var value any
	if err := json.Unmarshal(raw, &value); err != nil {
		log.Fatalf("terraform-mapping.json: %v", err)
	}
	out, err := json.Marshal(value)
	if err != nil {
		log.Fatalf("terraform-mapping.json: %v", err)
	}
	return out
}
