#!/usr/bin/env bash
# Apache Iceberg's REST catalog server (org.apache.iceberg.rest.RESTCatalogServer, the code behind
# the apache/iceberg-rest-fixture Docker image), run from jars on Maven Central without Docker.
#
#   scripts/iceberg-rest.sh install              download the jars once (prints the lib directory)
#   scripts/iceberg-rest.sh start PORT WAREHOUSE start on 127.0.0.1:PORT, wait until it answers
#                                                GET /v1/config, print the server's PID
#   scripts/iceberg-rest.sh stop PORT            stop the server started on PORT
#
# The server is published only as the `test-fixtures` jar of org.apache.iceberg:iceberg-open-api,
# whose POM declares no dependencies (they live in Iceberg's Gradle build). `install` therefore
# resolves the runtime classpath from a small generated POM that mirrors the test-fixtures
# dependencies of `project(':iceberg-open-api')` in Iceberg's build.gradle: iceberg-core and its
# `tests` jar (RESTCatalogAdapter, RESTCatalogServlet), iceberg-aws/-gcp/-azure (the adapter reads
# their property classes), iceberg-aws-bundle (S3FileIO and the AWS SDK), hadoop-common (the
# catalog is built with a Hadoop Configuration), Jetty 12.1 and sqlite-jdbc. Maven copies the jars
# to ${XDG_CACHE_HOME:-~/.cache}/cachedb/iceberg-rest-$ICEBERG_VERSION/lib (about 140 MB, once).
#
# Configuration follows the upstream fixture: every CATALOG_* environment variable becomes a
# catalog property (CATALOG_ stripped, "__" -> "-", "_" -> ".", lower case), e.g.
# CATALOG_S3_ENDPOINT -> s3.endpoint, CATALOG_S3_PATH__STYLE__ACCESS -> s3.path-style-access.
# `start` sets the port, the warehouse and a SQLite JdbcCatalog in the state directory
# ($ICEBERG_REST_STATE, default a directory beside the log); for an s3:// warehouse it also
# defaults CATALOG_IO__IMPL to S3FileIO and passes S3 settings taken from
#   ICEBERG_REST_S3_ENDPOINT, ICEBERG_REST_S3_ACCESS_KEY_ID, ICEBERG_REST_S3_SECRET_ACCESS_KEY,
#   ICEBERG_REST_S3_REGION (default us-east-1)
# with path-style access on. Those values are handed to clients in LoadTable responses only as the
# catalog's own configuration; the script never prints them.
set -euo pipefail

ICEBERG_VERSION="${ICEBERG_VERSION:-1.11.0}"
JETTY_VERSION="${JETTY_VERSION:-12.1.14}"
HADOOP_VERSION="${HADOOP_VERSION:-3.4.2}"
SQLITE_JDBC_VERSION="${SQLITE_JDBC_VERSION:-3.50.3.0}"
SLF4J_VERSION="${SLF4J_VERSION:-2.0.17}"
START_TIMEOUT_S="${ICEBERG_REST_START_TIMEOUT_S:-90}"

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/cachedb"
home="$cache_root/iceberg-rest-$ICEBERG_VERSION"
lib="$home/lib"

die() {
	echo "iceberg-rest.sh: $*" >&2
	exit 1
}

write_pom() {
	local hadoop_exclusions="" g a
	for ga in org.eclipse.jetty:* ch.qos.reload4j:* org.slf4j:* log4j:* com.sun.jersey:* \
		com.github.pjfanning:jersey-json org.apache.zookeeper:* org.apache.curator:* \
		org.apache.kerby:* org.apache.avro:avro com.google.guava:* com.google.protobuf:* \
		org.apache.hadoop:hadoop-auth org.apache.commons:commons-configuration2 \
		org.apache.hadoop.thirdparty:hadoop-shaded-protobuf_3_7 \
		javax.servlet:* javax.servlet.jsp:* org.apache.hadoop:hadoop-annotations \
		dnsjava:* com.jcraft:* org.apache.commons:commons-compress io.netty:* ; do
		g="${ga%%:*}"
		a="${ga#*:}"
		hadoop_exclusions+="<exclusion><groupId>$g</groupId><artifactId>$a</artifactId></exclusion>"
	done
	cat >"$home/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>cachedb.test</groupId>
  <artifactId>iceberg-rest-fixture-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-open-api</artifactId><version>$ICEBERG_VERSION</version><classifier>test-fixtures</classifier></dependency>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-core</artifactId><version>$ICEBERG_VERSION</version></dependency>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-core</artifactId><version>$ICEBERG_VERSION</version><classifier>tests</classifier></dependency>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-aws</artifactId><version>$ICEBERG_VERSION</version></dependency>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-aws-bundle</artifactId><version>$ICEBERG_VERSION</version></dependency>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-gcp</artifactId><version>$ICEBERG_VERSION</version></dependency>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-azure</artifactId><version>$ICEBERG_VERSION</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-common</artifactId><version>$HADOOP_VERSION</version><exclusions>$hadoop_exclusions</exclusions></dependency>
    <dependency><groupId>org.eclipse.jetty.ee10</groupId><artifactId>jetty-ee10-servlet</artifactId><version>$JETTY_VERSION</version></dependency>
    <dependency><groupId>org.eclipse.jetty.compression</groupId><artifactId>jetty-compression-server</artifactId><version>$JETTY_VERSION</version></dependency>
    <dependency><groupId>org.eclipse.jetty.compression</groupId><artifactId>jetty-compression-gzip</artifactId><version>$JETTY_VERSION</version></dependency>
    <dependency><groupId>org.xerial</groupId><artifactId>sqlite-jdbc</artifactId><version>$SQLITE_JDBC_VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>$SLF4J_VERSION</version></dependency>
  </dependencies>
</project>
EOF
}

install() {
	command -v java >/dev/null || die "java (17 or newer) is not on PATH"
	command -v mvn >/dev/null || die "mvn is not on PATH (it resolves the server's classpath)"
	mkdir -p "$home"
	# The lock is held in a subshell only, so that no server started afterwards inherits it.
	(
		flock 9
		if [[ ! -f "$home/.complete" ]]; then
			echo "downloading the Iceberg $ICEBERG_VERSION REST catalog server into $lib" >&2
			rm -rf "$lib"
			write_pom
			mvn -q -B -f "$home/pom.xml" -Dmdep.useRepositoryLayout=false \
				org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
				-DoutputDirectory="$lib" -DincludeScope=runtime >&2
			touch "$home/.complete"
		fi
	) 9>"$home.lock"
	echo "$lib"
}

ready() {
	curl -fsS -m 2 -o /dev/null "http://127.0.0.1:$1/v1/config" 2>/dev/null
}

start() {
	local port="$1" warehouse="$2"
	[[ "$port" =~ ^[0-9]+$ ]] || die "start: PORT must be a number, got '$port'"
	install >/dev/null
	if ready "$port"; then
		die "something already answers on 127.0.0.1:$port"
	fi
	local run="${ICEBERG_REST_RUN_DIR:-${TMPDIR:-/tmp}/cachedb-iceberg-rest}"
	mkdir -p "$run"
	local state="${ICEBERG_REST_STATE:-$run/state-$port}"
	mkdir -p "$state"
	local log="$run/rest-$port.log"
	local pidfile="$run/rest-$port.pid"

	export CATALOG_REST_PORT="$port"
	export CATALOG_WAREHOUSE="$warehouse"
	export CATALOG_URI="${CATALOG_URI:-jdbc:sqlite:$state/catalog.db}"
	export CATALOG_JDBC_SCHEMA__VERSION="${CATALOG_JDBC_SCHEMA__VERSION:-V1}"
	if [[ "$warehouse" == s3://* ]]; then
		export CATALOG_IO__IMPL="${CATALOG_IO__IMPL:-org.apache.iceberg.aws.s3.S3FileIO}"
		[[ -n "${ICEBERG_REST_S3_ENDPOINT:-}" ]] && export CATALOG_S3_ENDPOINT="$ICEBERG_REST_S3_ENDPOINT"
		[[ -n "${ICEBERG_REST_S3_ACCESS_KEY_ID:-}" ]] && export CATALOG_S3_ACCESS__KEY__ID="$ICEBERG_REST_S3_ACCESS_KEY_ID"
		[[ -n "${ICEBERG_REST_S3_SECRET_ACCESS_KEY:-}" ]] && export CATALOG_S3_SECRET__ACCESS__KEY="$ICEBERG_REST_S3_SECRET_ACCESS_KEY"
		export CATALOG_S3_PATH__STYLE__ACCESS="${CATALOG_S3_PATH__STYLE__ACCESS:-true}"
		export CATALOG_CLIENT_REGION="${ICEBERG_REST_S3_REGION:-us-east-1}"
		export AWS_REGION="${ICEBERG_REST_S3_REGION:-us-east-1}"
	elif [[ "$warehouse" != *://* ]]; then
		mkdir -p "$warehouse"
	fi

	# A small heap and a single JIT thread pool keep the JVM polite on a 2-core machine.
	nohup java -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
		-Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
		-cp "$lib/*" org.apache.iceberg.rest.RESTCatalogServer >"$log" 2>&1 </dev/null &
	local pid=$!
	echo "$pid" >"$pidfile"
	local deadline=$((SECONDS + START_TIMEOUT_S))
	until ready "$port"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "iceberg-rest.sh: the server exited before answering; its log ($log):" >&2
			tail -n 40 "$log" >&2
			exit 1
		fi
		if ((SECONDS >= deadline)); then
			kill "$pid" 2>/dev/null || true
			echo "iceberg-rest.sh: no answer on 127.0.0.1:$port within ${START_TIMEOUT_S}s; log ($log):" >&2
			tail -n 40 "$log" >&2
			exit 1
		fi
		sleep 0.2
	done
	echo "$pid"
}

stop() {
	local port="$1"
	local run="${ICEBERG_REST_RUN_DIR:-${TMPDIR:-/tmp}/cachedb-iceberg-rest}"
	local pidfile="$run/rest-$port.pid"
	[[ -f "$pidfile" ]] || die "stop: no server was started on port $port ($pidfile missing)"
	local pid
	pid="$(cat "$pidfile")"
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$pidfile"
}

case "${1:-}" in
install) install ;;
start)
	[[ $# -eq 3 ]] || die "usage: $0 start PORT WAREHOUSE"
	start "$2" "$3"
	;;
stop)
	[[ $# -eq 2 ]] || die "usage: $0 stop PORT"
	stop "$2"
	;;
*) die "usage: $0 install | start PORT WAREHOUSE | stop PORT" ;;
esac
