module ringside/contenders/go

go 1.22
