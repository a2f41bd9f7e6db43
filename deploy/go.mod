module github.com/cachedb/cachedb/deploy

go 1.26.8
