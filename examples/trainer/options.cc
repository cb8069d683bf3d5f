int main_placeholder_options();
