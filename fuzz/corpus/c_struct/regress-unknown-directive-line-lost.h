struct s {
	int x;
#enifd
	int y;
};
