module example.com/hooksrepo

go 1.22
