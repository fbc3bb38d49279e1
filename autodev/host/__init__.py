"""autodev's own processes on the host: every git command it runs (`hostgit`), its Python children
(`hostproc`), and the process groups it starts and ends (`procgroup`). Imports nothing of autodev
but `errors`."""
