struct s {
	int x;
	int y; };
