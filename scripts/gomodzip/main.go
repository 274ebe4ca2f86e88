// Command gomodzip writes a Go module's zip, .mod, .info and list files into
// a file-system module proxy (GOPROXY=file://DIR), with the module zip rules
// of golang.org/x/mod/zip (the rules proxy.golang.org applies), then checks
// the zip with the same package. scripts/release.sh runs it.
//
//	go run . -dir DIR -module PATH -version vX.Y.Z -proxy OUT
//
// DIR is a copy of the module's directory as the release tag holds it. As
// the go command does for a module in a subdirectory of its repository,
// -license names the repository's LICENSE to add when DIR has none.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

func main() {
	dir := flag.String("dir", "", "the module's directory")
	path := flag.String("module", "", "the module path")
	version := flag.String("version", "", "the version (a semantic version with a v)")
	proxy := flag.String("proxy", "", "the file proxy to write into")
	license := flag.String("license", "", "a LICENSE to add when the directory has none")
	flag.Parse()
	if err := run(*dir, *path, *version, *proxy, *license); err != nil {
		fmt.Fprintln(os.Stderr, "gomodzip:", err)
		os.Exit(1)
	}
}

func run(dir, path, version, proxy, license string) error {
	if dir == "" || path == "" || version == "" || proxy == "" {
		return fmt.Errorf("-dir, -module, -version and -proxy are all required")
	}
	mv := module.Version{Path: path, Version: version}
	if err := module.Check(path, version); err != nil {
		return err
	}
	if license != "" {
		if _, err := os.Stat(filepath.Join(dir, "LICENSE")); os.IsNotExist(err) {
			data, err := os.ReadFile(license)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, "LICENSE"), data, 0o644); err != nil {
				return err
			}
		}
	}
	escaped, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	out := filepath.Join(proxy, escaped, "@v")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	zipPath := filepath.Join(out, version+".zip")
	f, err := os.Create(zipPath)
	if err != nil {
		return err
	}
	if err := modzip.CreateFromDir(f, mv, dir); err != nil {
		f.Close()
		return fmt.Errorf("creating the zip: %w", err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	checked, err := modzip.CheckZip(mv, zipPath)
	if err != nil {
		return fmt.Errorf("checking the zip: %w", err)
	}
	if err := checked.Err(); err != nil {
		return fmt.Errorf("checking the zip: %w", err)
	}
	for _, omitted := range checked.Omitted {
		fmt.Printf("omitted: %s (%v)\n", omitted.Path, omitted.Err)
	}
	fmt.Printf("%s: %d files, valid\n", zipPath, len(checked.Valid))
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, version+".mod"), gomod, 0o644); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, version+".info"), info, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "list"), []byte(version+"\n"), 0o644)
}
