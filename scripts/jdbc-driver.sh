#!/usr/bin/env bash
# The Apache Arrow Flight SQL JDBC driver (org.apache.arrow:flight-sql-jdbc-driver, the jar DBeaver
# and DataGrip load), fetched once from Maven Central for the JDBC client test.
#
#   scripts/jdbc-driver.sh install    download the jar once; print its path
#
# The jar is self-contained (shaded); it lands under
# ${XDG_CACHE_HOME:-~/.cache}/cachedb/flight-sql-jdbc-driver-$VERSION/, as scripts/iceberg-rest.sh
# keeps its jars. Running it needs java 17 or newer.
set -euo pipefail

VERSION="${FLIGHT_SQL_JDBC_VERSION:-18.3.0}"
MAVEN_CENTRAL="${MAVEN_CENTRAL:-https://repo1.maven.org/maven2}"

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/cachedb"
home="$cache_root/flight-sql-jdbc-driver-$VERSION"
jar="$home/flight-sql-jdbc-driver-$VERSION.jar"

die() {
	echo "jdbc-driver.sh: $*" >&2
	exit 1
}

install() {
	command -v java >/dev/null || die "java (17 or newer) is not on PATH"
	mkdir -p "$home"
	# The lock is held in a subshell only; the download lands under a temporary name first, so
	# an interrupted one is never taken for the jar.
	(
		flock 9
		if [[ ! -f "$jar" ]]; then
			echo "downloading the Flight SQL JDBC driver $VERSION into $home" >&2
			curl -fsSL --retry 3 -o "$jar.part" \
				"$MAVEN_CENTRAL/org/apache/arrow/flight-sql-jdbc-driver/$VERSION/flight-sql-jdbc-driver-$VERSION.jar"
			mv "$jar.part" "$jar"
		fi
	) 9>"$home.lock"
	echo "$jar"
}

case "${1:-}" in
install) install ;;
*) die "usage: $0 install" ;;
esac
