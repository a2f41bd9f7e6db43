package catalog

import (
	"encoding/base64"
	"strings"
)

// locationPrefix starts the name of a table given by the location of its Iceberg metadata file
// instead of by a catalog name (a job spec's metadata_location).
const locationPrefix = "location:"

// LocationTableName is the table name under which a source catalog opens the table whose
// metadata file is at location, read with that catalog's storage settings. The location is
// encoded (base64url) so that the name has no dots, slashes or '@' for name resolution to
// split: qualify it with the catalog (`lake`.`location:…`) and add "@snapshot" like any name.
func LocationTableName(location string) string {
	return locationPrefix + base64.RawURLEncoding.EncodeToString([]byte(location))
}

// ParseLocationTableName returns the metadata location a LocationTableName names.
func ParseLocationTableName(name string) (string, bool) {
	enc, ok := strings.CutPrefix(name, locationPrefix)
	if !ok {
		return "", false
	}
	loc, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(loc) == 0 {
		return "", false
	}
	return string(loc), true
}
